// Every live test worker runs the core in-process with the guards its environment names (scripts/ablate.sh
// sets COTAL_TEST_UNSAFE_<NAME>=1 on the run), as the CLI's entry does for the cotal processes it starts.
import { testGuards } from "@cotal/harness";

testGuards();
