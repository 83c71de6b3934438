#!/usr/bin/env bash
# Simulated hosts for cluster tests (docs/cluster.md "Hosts, simulated here"): N network namespaces
# <prefix>-h1…hN, each with loopback up and one address 10.99.0.<i>/24 on its eth0, a veth whose other
# end sits on a bridge inside one more namespace, <prefix>-net. Nothing is added to the root namespace
# (no link, no address, no route), so a host reaches the other hosts and nothing else: not the
# machine's loopback services, not its network. Needs root (ip netns).
#
#   infra/hosts.sh up N                 create hosts 1..N (idempotent; hosts above N are removed)
#   infra/hosts.sh down                 remove every host and the bridge (idempotent)
#   infra/hosts.sh exec HOST cmd…       run cmd inside HOST (1, h1 or <prefix>-h1), hostname <prefix>-h<i>
#   infra/hosts.sh exec HOST --hide PATH… cmd…  the same, with each PATH an empty read-only directory
#                                       or file for cmd (what this host cannot read: another host's
#                                       disk, a record only the control host keeps)
#   infra/hosts.sh addr HOST            print HOST's address
#   infra/hosts.sh list                 print "name address" per host
#   infra/hosts.sh cut HOST | heal HOST take HOST's link down (a partition) or up again
#
# COTAL_HOSTS_PREFIX (default "cotal") names the set, so two sets never meet: each has its own bridge.
set -euo pipefail

prefix="${COTAL_HOSTS_PREFIX:-cotal}"
[[ "$prefix" =~ ^[a-z][a-z0-9]{0,9}$ ]] || { echo "hosts.sh: COTAL_HOSTS_PREFIX must be 1-10 of [a-z0-9], starting with a letter, not '$prefix'" >&2; exit 2; }
net="$prefix-net"
MAX=20

usage() { sed -n '7,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
have_ns() { ip netns list | awk '{print $1}' | grep -qx "$1"; }
host_ns() { echo "$prefix-h$1"; }
addr_of() { echo "10.99.0.$1"; }

# host_index HOST: 3, h3 or <prefix>-h3 → 3; anything else refuses.
host_index() {
  local h="${1:-}"
  h="${h#"$prefix"-}"
  h="${h#h}"
  [[ "$h" =~ ^[1-9][0-9]?$ ]] && [ "$h" -le "$MAX" ] || { echo "hosts.sh: '$1' is not a host (1-$MAX, h1 or $prefix-h1)" >&2; exit 2; }
  echo "$h"
}

existing() { ip netns list | awk '{print $1}' | grep -E "^$prefix-h[0-9]+$" | sed "s/^$prefix-h//" | sort -n || true; }

remove_host() {
  local ns
  ns="$(host_ns "$1")"
  # Deleting the namespace deletes its eth0, and with it the veth's other end on the bridge.
  if have_ns "$ns"; then ip netns delete "$ns"; fi
}

ensure_net() {
  have_ns "$net" || ip netns add "$net"
  ip -n "$net" link set lo up
  ip -n "$net" link show br0 >/dev/null 2>&1 || ip -n "$net" link add br0 type bridge
  ip -n "$net" link set br0 up
}

ensure_host() {
  local i="$1" ns
  ns="$(host_ns "$i")"
  have_ns "$ns" || ip netns add "$ns"
  ip -n "$ns" link set lo up
  if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
    ip -n "$net" link del "v$i" >/dev/null 2>&1 || true
    # Both ends are created straight inside their namespaces: the root namespace never holds either.
    ip -n "$net" link add "v$i" type veth peer name eth0 netns "$ns"
  fi
  ip -n "$net" link set "v$i" master br0
  ip -n "$net" link set "v$i" up
  ip -n "$ns" addr replace "$(addr_of "$i")/24" dev eth0
  ip -n "$ns" link set eth0 up
}

cmd="${1:-}"
[ -n "$cmd" ] || usage
shift
case "$cmd" in
  up)
    n="${1:-}"
    [[ "$n" =~ ^[1-9][0-9]?$ ]] && [ "$n" -le "$MAX" ] || { echo "hosts.sh: up needs a host count 1-$MAX, not '${n}'" >&2; exit 2; }
    ensure_net
    for i in $(seq 1 "$n"); do ensure_host "$i"; done
    for i in $(existing); do [ "$i" -le "$n" ] || remove_host "$i"; done
    for i in $(seq 1 "$n"); do echo "$(host_ns "$i") $(addr_of "$i")"; done
    ;;
  down)
    for i in $(existing); do remove_host "$i"; done
    if have_ns "$net"; then ip netns delete "$net"; fi
    ;;
  exec)
    [ $# -ge 2 ] || usage
    i="$(host_index "$1")"
    shift
    have_ns "$(host_ns "$i")" || { echo "hosts.sh: host $i is not up: infra/hosts.sh up $i" >&2; exit 2; }
    hide=()
    while [ "${1:-}" = "--hide" ]; do
      [ -e "${2:-}" ] || { echo "hosts.sh: --hide needs an existing directory or file, not '${2:-}'" >&2; exit 2; }
      hide+=("$2")
      shift 2
    done
    [ $# -ge 1 ] || usage
    # The host's own hostname (a UTS namespace per command, named after the host), so a process's
    # owner names the host it runs on. ip netns exec runs cmd in a mount namespace of its own (a slave
    # of the root's): a tmpfs (a directory) or an empty file (a file) mounted there covers PATH for cmd
    # alone, never the root's or another host's.
    # unshare and bash exec in place, so a signal to this command reaches cmd itself.
    exec ip netns exec "$(host_ns "$i")" unshare --uts bash -c 'hostname "$1"; n=$2; shift 2; for d in "${@:1:n}"; do if [ -d "$d" ]; then mount -t tmpfs -o ro,size=4k,mode=0500 cotal-hidden "$d" || exit 2; else e=$(mktemp) && chmod 0400 "$e" && mount --bind "$e" "$d" && mount -o remount,bind,ro "$d" && rm -f "$e" || exit 2; fi; done; shift "$n"; exec "$@"' host "$(host_ns "$i")" "${#hide[@]}" "${hide[@]}" "$@"
    ;;
  addr)
    addr_of "$(host_index "${1:-}")"
    ;;
  list)
    for i in $(existing); do echo "$(host_ns "$i") $(addr_of "$i")"; done
    ;;
  cut | heal)
    i="$(host_index "${1:-}")"
    have_ns "$net" && ip -n "$net" link show "v$i" >/dev/null 2>&1 || { echo "hosts.sh: host $i is not up" >&2; exit 2; }
    ip -n "$net" link set "v$i" "$([ "$cmd" = cut ] && echo down || echo up)"
    ;;
  *) usage ;;
esac
