export { buildProgram, main } from "./program.js";
export { EXIT, exitCodeFor } from "./exit-codes.js";
export { redact } from "./output.js";
export { parseDuration } from "./duration.js";
