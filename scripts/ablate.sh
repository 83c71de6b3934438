#!/usr/bin/env bash
# Ablation: for each guard, switch exactly that guard off (COTAL_TEST_UNSAFE_<SWITCH>=1) and run the
# live cell that must catch it. Every cell must go red; a cell that stays green proves nothing.
# Usage: scripts/ablate.sh [SWITCH…]   (default: every row below). Exits 1 if any ablated cell stays green.
# Servers: COTAL_ABLATE_SERVERS (paths, one a line, the default first; infra/test.sh passes
# scripts/servers.sh supported), else NATS_SERVER_BIN or the default. Each row runs on the first of them
# its server range admits: the default, unless its guard bites only on an older server.
set -uo pipefail
cd "$(dirname "$0")/.."

# switch | suite | cell name pattern (vitest -t) | guard | servers it bites on (optional: >=V or <V)
ROWS=(
  "DISABLE_CAS|matrix|gate: overlapping reads|every inventory CAS (R1 lost update)"
  "DISABLE_CAS|matrix|one conflicts and re-decides; neither is lost|every inventory CAS, a revocation racing an add (R4)"
  "DISABLE_CLAIM_CAS|guards|claim CAS|step-3 claim CAS"
  "DISABLE_STAGE_CAS|guards|staged-digest CAS|step-5 staged-digest CAS"
  "DISABLE_FENCE|matrix|lease expiry while paused before rename|step-6 lease fence"
  "PROOF_WITHOUT_LOG|matrix|a config the broker rejects|proof-only appliedGeneration"
  "LOG_FROM_START|guards|log offset|log offset (only lines after our SIGHUP)|<2.10.0"
  "SKIP_COMMIT_DIGEST|guards|commit digest|step-8 commit digest check"
  "IGNORE_JOURNAL|journal|rm cut after its commit|journal refusal"
  "SKIP_LOCK|cli-foundation|two concurrent ups|maintenance lock"
  "DISABLE_SEED_CAS|guards|seed create-only CAS|seed create-only CAS"
  "SKIP_NAME_VALIDATION|cli-foundation|invalid names on an existing root|name validation"
  "IGNORE_CORRUPT|cli-foundation|a corrupt account record makes up refuse|corrupt-record refusal"
  "ACCEPT_PARTIAL_SNAPSHOT|backup-faults|killed mid-snapshot|a snapshot counts only with the server's end marker"
  "SKIP_STORE_CHECK|backup-online|a corrupted message in the store|a backup's snapshots pass the server's checksum check (jsck)|<2.15.0"
  "IGNORE_STRAYS|strays|a server with no record|one server per store (unrecorded servers are found)"
  "WIDE_OBSERVER_INBOX|isolation|the authority buckets and others|per-cred \$SYS reply prefix"
  "WIDE_OBSERVER_REQUESTS|isolation|the authority buckets and others|\$SYS requests only about the own account"
  "UNRESTRICTED_USER|isolation|uses A's template but cannot create|least-privilege default user"
  "NO_EVICT|isolation|cuts every connection of one account|per-broker connection evictor|>=2.10.0"
  "UNLIMITED_TENANTS|quotas|A is refused at its quota|per-space quotas and the authority reserve"
  "KEEP_LIMITS_RECORD|quotas|crash after the record is re-signed|space limits rollback restores the record"
  "SKIP_REVOCATION|revoke|never connects after the verb returns|space revoke signs the revocation into the account JWT"
  "SKIP_SIGNING_KEY_REMOVAL|rotate-key|never connects after the verb returns|space rotate-key removes the old signing key, so every user it signed is refused"
  "STALE_RECORD_VIEW|quotas|raises a full tenant's quota|the render re-reads the record its own claim re-signs, and takes the verb's inventory view only at the revision it was read after"
  "RENDER_SETTINGS_MAX|quotas|is kept by live renders|a running broker keeps its booted JetStream max"
  "DASHBOARD_ANY_HOST|dashboard|refuses a non-loopback host|the dashboard binds loopback only unless --allow-remote"
  "DASHBOARD_ANY_HOST_HEADER|dashboard|foreign Host header|the dashboard answers only its own Host (DNS rebinding)"
  "DASHBOARD_WRITES|dashboard|refuses every non-GET with 405|the dashboard is read-only by construction: every non-GET refused with 405 before Bull Board (itself read-only)"
  "LOG_SEEDS|jobs-onboarding|worker logs are JSON lines with no seed|the log seed scrubber"
  "IGNORE_FD_BUDGET|scale-limits|cannot fit in the broker|batch add refused before any write past the broker's open files"
  "IGNORE_RECORD_SIZE|scale-limits|larger than the broker|inventory writes refused past max_payload, never a conflict"
  "SKIP_QUIESCE|backup-online|quiesces only the tenant|online backup quiesce (the tenant's clients refused while its streams are read)"
  "RESTORE_OVER_DATA|restore-online|refuses restore-target-not-empty|online restore refuses a namespace holding the artifact's streams with data"
  "RESTORE_OVER_DATA|restore-online|a stream the artifact does not name|online restore refuses a namespace holding data in any stream, named by the artifact or not"
  "RESTORE_WITHOUT_SAFETY_COPY|restore-online|fails after the deletion|restore keeps a safety copy of every stream it deletes and puts it back when the restore fails"
  "RESTORE_SKIP_QUOTA_CHECK|restore-online|does not fit the tenant's disk quota|restore checks the artifact fits the tenant's quota before the quiesce"
  "LIMITS_BELOW_USAGE|restore-online|space limits refuses a disk quota below|space limits refuses a disk or stream quota below what the tenant stores (unless --force)"
  "STATUS_IGNORES_BLOCKS|status-blocked|a removal cut after its streams were deleted|status names a standing journal entry or a dead lock holder as what blocks the root, never clean"
  "RM_SKIP_RENDER_CHECK|rm-prechecks|another tenant's record missing|space rm checks the config without the space renders before it deletes any stream"
  "LINGER_AFTER_VERB|stopped-server|a stopped Redis|a finished verb exits at once, whatever a library left open (a socket to a stopped Redis)"
  "CLUSTER_COMMIT_UNPROVEN|cluster|kill -9 of node 3|a cluster root commits only what every member node proved"
  "CLONE_WHOLE_STORE|backup-roundtrip|clone holds only the tenant|an offline backup/restore clones only the tenant's account directory"
  "IGNORE_RESTORE_RECEIPT|jobs-schedule|answers from its receipt|a re-delivered queued restore answers from its receipt, never restores twice"
  "RM_DURING_PROVISIONING|provision-overlap|rm waits for the provisioning|space rm waits for a committed add still provisioning the space"
  "CLUSTER_NO_PARTIAL_PROOFS|cluster|kill -9 of node 3|a refused cluster reload records the nodes that proved it, so status names only the others"
  "EVICT_FIRST_NODE_ONLY|cluster|evictor on every node|a removed tenant is evicted on every node|>=2.10.0"
  "TEMPLATE_REPLICAS_UNCHECKED|cluster|tenant-replicas 3 on a single broker|a space template's replicas are 1 or 3, at most the cluster's size, 1 on a single broker"
  "CLUSTER_BEHIND_ANY_OP|cluster|kill -9 of node 3: the writer refuses|only an add may commit with a down node left behind; a removal needs every node's proof"
  "CLUSTER_OFFLINE_VERBS|cluster-verbs|space rm on the stopped cluster|an offline verb on a stopped cluster root refuses cluster-offline before any write"
  "ROTATE_WITH_NODES_UP|cluster-verbs|refused broker-running while any node runs|up --rotate-sys on a cluster root needs every node stopped"
  "CLUSTER_NO_NODE_FENCE|cluster-matrix|cluster lease expiry between nodes: a writer paused|a cluster reload re-checks the lease before each node's rename"
  "CLUSTER_NO_PARTIAL_PROOFS|cluster-matrix|partial proofs as made|each node's proof lands in the claim as it is made"
  "DISABLE_CAS|cluster-matrix|cluster R1 gate|every inventory CAS on a cluster (R1 lost update)"
  "DISABLE_FENCE|cluster-matrix|cluster lease expiry before rename|step-6 lease fence on a cluster"
  "NODE_APPLY_UNFENCED|cluster-node|lease rule, a writer mid-removal|cotal node applies to its node only under the writer lease, deciding again on the record it re-reads there"
  "NODE_ADMITS_PENDING_REMOVES|cluster-node|pending-claim rule|cotal node never lets its node admit a tenant a pending claim removes"
  "DOWN_WITHOUT_STOP_INTENT|cluster-node|keeps every node down until|cotal down names the cluster nodes it stops, so the agents that ran then keep them down until cotal up"
  "UP_ANY_SPACE|printed-exits|up --space nosuch on a running root|up --space on a running root names a space it serves, never a creds path that does not exist"
  "CREDS_OUT_UNCHECKED|printed-exits|creds --out under a regular file|space creds --out is checked before any write (io naming the path, not internal)"
  "NODE_AGENT_UNLOCKED|printed-exits|second cotal node run for the same node|one cotal node run a node (the per-node agent lock)"
  "KEEP_LOCK_TEMP|printed-exits|a full disk|a lock file's temp is removed when its write fails"
  "NO_BROKER_ADOPT|printed-exits|truncated run/broker.json|up adopts a running broker whose run/broker.json is unreadable (no restart)"
  "UP_SKIP_PORT_CHECK|up-listener|a taken port|up refuses a taken port before it creates a root or starts a server, naming the holder"
  "DOWN_WITHOUT_STOP_INTENT|systemd-broker|cotal down --preserve-state|cotal down names the foreground broker it stops, so the up serving it exits 0 and nothing restarts it|<2.11.0"
  "CLUSTER_BOOT_BARE|cluster-restart|restart: down then up, tenant streams R1|a restarted cluster node boots with every tenant held, so JetStream keeps its tenants' streams assigned and writable"
  "ROUTES_WITHOUT_AUTH|cluster-routes|a stranger server is refused|a cluster's routes are mutual TLS with route auth: a server that is not a node cannot join"
  "VERBS_FIRST_NODE_ONLY|cluster-any-node|kill -9 of node 1|a cluster root's verbs go through whichever node answers, not node 1 alone"
  "REMOTE_NODE_BY_SIGNAL|cluster-hosts|partition by a cut link: host 3 cut off before space rm|a node on another host is reloaded only by a request to it: cut off, it proves nothing and a removal refuses cluster-unproven"
  "NODE_PROOF_ANY_DIGEST|cluster-hosts|proof by the server's digest|a node counts as proven only if its server's config digest is the prediction of the bytes renamed for it: a node whose agent finds it loaded other bytes applies again before it answers, and the removal waits for that|>=2.11.0"
  "NODE_ASK_UNFENCED|cluster-hosts|a gone writer's ask is no instruction|a node agent applies a writer's ask only while that writer still holds the lease it asked under: an ask left by a writer that is gone changes no node"
  "SIGNAL_NODES_ELSEWHERE|cluster-hosts|liveness by reachability|a node on another host is never signalled from the control host: cotal down there stops its own node only"
  "NODE_MATERIAL_UNPUBLISHED|cluster-hosts|the agent renders from the public bucket|each cluster reload publishes the node material before its first node rename: an agent that reads no tenant record renders the list from it"
  "AGENT_CREDS_UNRESTRICTED|cluster-hosts|the agent's own users|a node agent's authority user may only read the record, the lease and the node material, write its own proof key and the lease, and watch the record: it cannot write the record, the node material or another node's proof, nor create a stream"
  "UNRECORDED_NODES_IGNORED|cluster-hosts|finding the nodes|the verbs and status know every node of settings.json on another host, not only what this host's run/broker.json records: a verb reloads and proves them all"
  "FORGET_KEEPS_AGENT_USER|cluster-membership|node|cotal node forget revokes the forgotten node's agent authority user: a host that kept its creds can no longer read the record or the node material"
  "ROUTES_UNPINNED|cluster-membership|node|every node's route TLS pins the current nodes' certificates: a forgotten node that comes back with its files (its CA-signed certificate, the route password) is refused at every route"
  "ROTATE_STRANDS_RAFT|cluster-verbs|the system account rotates and every node boots on it|up --rotate-sys on a cluster root carries each node's raft groups to the new system account's directory: no stream is found orphaned and deleted"
  "NODE_ADD_UNPROVEN|cluster-membership|node add|cotal node add returns only once the new node and every other node proved the committed record, and the record names its proof"
)

want=("$@")
if [ -n "${COTAL_ABLATE_SERVERS:-}" ]; then mapfile -t servers <<<"$COTAL_ABLATE_SERVERS"
else servers=("$(bash scripts/servers.sh default)") || exit 6; fi
versions=()
for bin in "${servers[@]}"; do versions+=("$("$bin" --version 2>/dev/null | grep -o '[0-9]*\.[0-9]*\.[0-9]*' | head -1)"); done
# in_range VERSION RANGE: RANGE is empty (every server), ">=V" or "<V".
in_range() {
  local v="$1" r="$2" lowest
  [ -n "$r" ] || return 0
  lowest="$(printf '%s\n%s\n' "${r#*[=<]}" "$v" | sort -V | head -1)"
  case "$r" in
    ">="*) [ "$lowest" = "${r#>=}" ] ;;
    "<"*) [ "$lowest" = "$v" ] && [ "$v" != "${r#<}" ] ;;
    *) echo "ablate: a row's server range must be >=V or <V, not '$r'" >&2; exit 2 ;;
  esac
}
report_dir="${COTAL_TEST_REPORT_DIR:-$PWD/.test-results}/ablation"
# Rows run two at a time (COTAL_ABLATE_JOBS): most cells wait on servers and leases, not the cores.
# The matrix's rows run alone: their cells need a dense credential poll (docs/ablation.md).
# cluster-hosts' rows run beside others, each on a set of namespace hosts of its own (cab<row>).
jobs_max="${COTAL_ABLATE_JOBS:-2}"
[[ "$jobs_max" =~ ^[1-9][0-9]*$ ]] || { echo "ablate: COTAL_ABLATE_JOBS must be a whole number ≥ 1, not '$jobs_max'" >&2; exit 2; }
rows_dir="$report_dir/rows"
rm -rf "$rows_dir" && mkdir -p "$rows_dir" || { echo "ablate: cannot make $rows_dir" >&2; exit 2; }

# One row: its verdict line goes to rows/<index>.md, and rows/<index>.failed marks a row that proved
# nothing (a row that dies before its verdict line fails the count at the end). Runs in the
# background, so it writes only its own files, and its stderr in one write.
run_row() {
  local i="$1" sw="$2" suite="$3" pattern="$4" guard="$5" bin="$6" version="$7"
  local log="$report_dir/$i-$sw-$suite.log" scratch ok plain verdict attempt
  # Only the cell itself runs; the switch reaches every cotal process the cell starts (inherited env).
  # The cell is meant to fail here: its vitest report goes to a scratch dir, never into the run's
  # test summary (scripts/test-summary.mjs counts every report under .test-results).
  # A run that broke before its cell (a hook, the runner), or whose poll was too sparse to prove
  # anything, is evidence of nothing either way: it is retried once, and its log's tail is printed.
  for attempt in 1 2; do
    scratch="$(mktemp -d)"
    ok=0
    (cd test-live && env "COTAL_TEST_UNSAFE_$sw=1" COTAL_TEST_HOSTS_PREFIX="cab$i" NATS_SERVER_BIN="$bin" COTAL_TEST_REPORT_DIR="$scratch" COTAL_MATRIX_DIR="$scratch/cells" npx vitest run "suites/$suite.test.ts" -t "$pattern" >"$log" 2>&1) && ok=1
    # The log is read whole before grep: `sed | grep -q` under pipefail fails when grep stops reading
    # early (sed takes SIGPIPE), which read a red cell as a broken run.
    plain="$(sed 's/\x1b\[[0-9;]*m//g' "$log")"
    if [ "$ok" = 1 ]; then
      # Green with nothing run is a wrong pattern, not a guard that caught nothing: say which.
      if grep -qE "Tests +([0-9]+ [a-z]+ \| )*[1-9][0-9]* passed" <<<"$plain"; then verdict="NO: stayed green"
      else verdict="NO: -t matched no test in $suite"; fi
    elif node scripts/inconclusive-only.mjs "$scratch/live.json"; then
      # The same rule CI's second chance for a matrix uses: red only for want of a dense poll.
      verdict="NO: red only for a sparse poll ($log)"
    elif grep -qE "Tests +[0-9]+ failed" <<<"$plain"; then
      verdict="yes"
    else
      verdict="NO: the run broke before the cell ($log)"
    fi
    rm -rf "$scratch"
    case "$verdict" in
      "NO: the run broke"* | "NO: red only"*)
        printf 'ablate: %s/%s attempt %s: %s; the log ends:\n%s\n' "$sw" "$suite" "$attempt" "${verdict#NO: }" "$(tail -40 <<<"$plain")" >&2 ;;
      *) break ;;
    esac
  done
  [ "$verdict" = yes ] || : >"$rows_dir/$i.failed"
  printf '| %s | %s | %s: %s | %s | %s |\n' "$guard" "$sw" "$suite" "$pattern" "$version" "$verdict" | tee "$rows_dir/$i.md"
}

ran=0
listed=0
i=0
for row in "${ROWS[@]}"; do
  i=$((i + 1))
  IFS='|' read -r sw suite pattern guard range <<<"$row"
  if [ "${#want[@]}" -gt 0 ] && ! printf '%s\n' "${want[@]}" | grep -qx "$sw"; then continue; fi
  listed=$((listed + 1))
  bin="" version=""
  for k in "${!servers[@]}"; do
    if in_range "${versions[$k]}" "${range:-}"; then bin="${servers[$k]}" version="${versions[$k]}"; break; fi
  done
  if [ -z "$bin" ]; then
    printf '| %s | %s | %s: %s | - | skipped: no nats-server here in %s (%s) |\n' "$guard" "$sw" "$suite" "$pattern" "$range" "${versions[*]}" | tee "$rows_dir/$i.md"
    continue
  fi
  ran=$((ran + 1))
  if [ "$suite" = matrix ]; then
    wait
    run_row "$i" "$sw" "$suite" "$pattern" "$guard" "$bin" "$version"
  else
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
    run_row "$i" "$sw" "$suite" "$pattern" "$guard" "$bin" "$version" &
  fi
done
wait

# The table keeps the rows' order, whichever finished first.
{
  printf '| guard | switch | cell | nats-server | red with the switch? |\n|---|---|---|---|---|\n'
  for ((k = 1; k <= i; k++)); do [ ! -f "$rows_dir/$k.md" ] || cat "$rows_dir/$k.md"; done
} >"$report_dir/table.md"
echo
cat "$report_dir/table.md"
[ "$ran" -gt 0 ] || { echo "ablate: no row matched ${want[*]}" >&2; exit 2; }
if ls "$rows_dir"/*.failed >/dev/null 2>&1; then exit 1; fi
# A row that wrote no verdict line at all (killed before its first write) fails the run too.
[ "$(ls "$rows_dir"/*.md 2>/dev/null | wc -l)" = "$listed" ] || { echo "ablate: only $(ls "$rows_dir"/*.md 2>/dev/null | wc -l) of $listed rows wrote a verdict" >&2; exit 1; }
