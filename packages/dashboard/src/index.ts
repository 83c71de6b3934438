// `@cotal/dashboard`: the server `cotal dashboard` starts and the page data it renders, listed on purpose.
export { Html, escapeHtml, html } from "./html.js";
export { hostHeaderAllowed, isLoopbackHost } from "./loopback.js";
export { ALLOW_HEADER, READ_METHODS, READ_ONLY_REFUSAL, methodAllowed, readOnlyGuard } from "./read-only.js";
export { readTenantData, type BackupRecord, type BackupSchedule, type DashboardSpace, type LockHolder, type QueuesSection, type TenantPageData } from "./tenant-data.js";
export { renderTenantPage } from "./tenant-page.js";
export { PAGE_SIZES, pageHref, pageOfSpaces, parseSpaceQuery, type SpacePage, type SpaceQuery } from "./paging.js";
export { DEFAULT_DASHBOARD_PORT, assertServable, startDashboard, type Dashboard, type DashboardOptions } from "./server.js";
