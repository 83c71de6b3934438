export * from "./html.js";
export * from "./loopback.js";
export * from "./tenant-data.js";
export * from "./tenant-page.js";
export * from "./server.js";
