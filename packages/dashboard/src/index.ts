// `@cotal/dashboard`: the server `cotal dashboard` starts and the page data it renders, listed on purpose.
export { Html, escapeHtml, html } from "./html.js";
export { hostHeaderAllowed, isLoopbackHost } from "./loopback.js";
export { ALLOW_HEADER, READ_METHODS, READ_ONLY_REFUSAL, methodAllowed, readOnlyGuard } from "./read-only.js";
export { readTenantData, type BackupRecord, type BackupSchedule, type DashboardSpace, type LockHolder, type QueuesSection, type TenantPageData } from "./tenant-data.js";
export { readTenantDetail, touchesOf, type SpaceFailedJob, type SpaceJobsSection, type TenantDetail } from "./tenant-detail.js";
export { renderTenantPage, tenantHref } from "./tenant-page.js";
export { renderTenantDetail } from "./detail-page.js";
export { rootVerdict, spaceSeverity, type RootVerdict, type Severity } from "./severity.js";
export { BOARD_CSP, localOnly } from "./bull-board.js";
export { boardQueueHref, queueDisplayName, queueMenuName } from "./board-names.js";
export { DEFAULT_REFRESH, PAGE_SIZES, pageHref, pageOfSpaces, parseRefresh, parseSpaceQuery, type SpacePage, type SpaceQuery } from "./paging.js";
export { DEFAULT_DASHBOARD_PORT, PAGE_CSP, assertServable, startDashboard, type Dashboard, type DashboardOptions } from "./server.js";
