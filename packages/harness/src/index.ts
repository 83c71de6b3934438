/**
 * @cotal/harness: real nats-server lifecycles for tests, no mocks.
 *
 *   const backend = await selectBackend();            // containers when Docker answers, else processes
 *   const broker = await backend.start({ config: "listen: {{HOST}}:{{PORT}}\njetstream { store_dir: \"{{STORE_DIR}}\" }\n" });
 *   await broker.reload(newConfig);                   // "reloaded" | "failed", judged on log after the SIGHUP
 *   await broker.kill(); await broker.restart();      // same port, same store
 *   afterAll(harnessTeardown);                        // disposes leaked brokers, removes temp roots
 *
 * CredentialPoller and SurvivorWatcher observe a server from the client side; runCotal/spawnCotal
 * drive the CLI as a child process; Barrier lets processes rendezvous through a directory.
 */
export { HarnessError, isHarnessError, type HarnessErrorCode, type HarnessErrorOptions } from "./errors.js";
export { monotonicMs, sleep } from "./clock.js";
export { freePort, freePorts } from "@cotal/core/server-process";
export { tempRoot, cleanupTempRoots, keepTempRoots, type TempRoot } from "./tempdir.js";
export { natsServerBinary, natsServerVersion, parseServerVersion, versionAtLeast, type ServerVersion } from "./binary.js";
export {
  DEFAULT_LOG_TIMEOUT_MS,
  DEFAULT_START_TIMEOUT_MS,
  DEFAULT_STOP_TIMEOUT_MS,
  RELOAD_FAILED,
  RELOAD_OK,
  RELOAD_VERDICT,
  SERVER_READY,
  disposeAllBrokers,
  renderConfig,
  usesHttpPort,
  type Broker,
  type BrokerBackend,
  type BrokerBackendKind,
  type BrokerSignal,
  type BrokerSpec,
  type ConfigVars,
  type ReloadOptions,
  type ReloadOutcome,
  type StartSpec,
  type WaitForLogOptions,
} from "./backend.js";
export { tail, waitForLogLine, type LogWatchSource } from "./logs.js";
export { ProcessBackend, ProcessBroker, type ProcessBackendOptions } from "./process-backend.js";
export { ContainerBackend, ContainerBroker, DEFAULT_NATS_IMAGE, containerizeConfig, type ContainerBackendOptions } from "./container-backend.js";
export { dockerAvailable, probeDocker, type DockerProbe } from "./docker.js";
export { forcedBackend, selectBackend, type BackendChoice, type SelectBackendOptions } from "./select.js";
export { nativeCredsAuthenticator, parseCreds, type ParsedCreds } from "./creds.js";
export {
  CredentialPoller,
  buildPollReport,
  type CredentialPollerOptions,
  type PollAttempt,
  type PollEngine,
  type PollReport,
  type WindowMode,
} from "./poller.js";
export { credpollBinary } from "./credpoll.js";
export { SurvivorWatcher, maxReconnectGapMs, type SurvivorWatcherOptions, type WatchEvent, type WatchEventType } from "./watcher.js";
export { cotalCliPath, repoRoot, runCotal, spawnCotal, type CotalResult, type CotalRunOptions } from "./cotal-process.js";
export { Barrier, barrierEnv, failpointBarrier, parseBarrierEnv, type BarrierSpec } from "./barrier.js";
export { harnessTeardown } from "./teardown.js";
export { NKEY_SEED } from "./nkey-seed.js";
export { parsePromText, promValue, type PromFamily, type PromSample } from "./prom-text.js";
export { testGuards } from "./guards.js";
export { parseUnitFile, restartsOnFailure, unitEnvironment, unitExecStart, unitFailed, unitList, unitValue, unitValues, type UnitFile } from "./unit-file.js";
