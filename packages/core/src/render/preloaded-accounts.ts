/** Account public keys preloaded by a rendered config; a pure read of our own renderer's layout. */
export function preloadedAccounts(configText: string): string[] {
  const start = configText.indexOf("resolver_preload: {");
  if (start < 0) return [];
  const end = configText.indexOf("\n}", start);
  const body = configText.slice(start, end < 0 ? undefined : end);
  const keys: string[] = [];
  for (const m of body.matchAll(/^\s*(A[A-Z2-7]{55})\s*:/gm)) if (m[1]) keys.push(m[1]);
  return keys;
}
