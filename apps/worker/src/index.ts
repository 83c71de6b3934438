export { workerArgs } from "./args.js";
