// The creds parser and the native-Ed25519 authenticator live with cotal's trust code; the poller
// and tests reach them from here.
export { nativeCredsAuthenticator, parseCreds, type ParsedCreds } from "@cotal/core/trust";
