#!/usr/bin/env bash
# Sets virtbench up on a fresh Debian/Ubuntu machine and runs the default campaign.
#   ./install.sh            install everything, then `virtbench run` (the default campaign)
#   ./install.sh --no-run   install everything only
# Idempotent: packages already present and images already built are not redone.
set -euo pipefail

run_campaign=1
for arg in "$@"; do
  case "$arg" in
    --no-run) run_campaign=0 ;;
    *) echo "usage: $0 [--no-run]" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "virtbench needs root (containers, VMs, cgroups, SCHED_FIFO); run $0 as root" >&2
    exit 1
  fi
  echo "virtbench needs root (containers, VMs, cgroups, SCHED_FIFO); re-running with sudo" >&2
  exec sudo "$0" "$@"
fi

here=$(cd "$(dirname "$0")" && pwd)
venv=/opt/virtbench/venv
export DEBIAN_FRONTEND=noninteractive

# Debian's own python3 (not a pyenv/conda one on PATH): the venv must survive user changes.
if ! /usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null || [ ! -x /usr/bin/python3 ]; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends python3 python3-venv python3-pip
fi
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv"
fi
# PostgreSQL's server programs: the store tests and bench/store_pg.py start a throwaway
# cluster of their own. Debian's package also creates and starts a default cluster; it is
# dropped at once when installed here, so no database server stays running on a measured host.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends postgresql
  for version in $(pg_lsclusters -h 2>/dev/null | awk '$2 == "main" {print $1}'); do
    pg_dropcluster --stop "$version" main
  done
fi
# a re-run from the same tree with the same dependencies skips pip: seconds, no index needed
# (virtbench fleet runs this on every host at every fleet run)
stamp="$venv/.virtbench-installed"
want="$here $(sha256sum "$here/pyproject.toml" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! "$venv/bin/python" -c 'import virtbench.cli' 2>/dev/null; then
  "$venv/bin/pip" install -q --upgrade pip >/dev/null
  "$venv/bin/pip" install -q -e "$here[dev]"
  echo "$want" >"$stamp"
fi
ln -sf "$venv/bin/virtbench" /usr/local/bin/virtbench

# Debian packages of every tool, then images (root filesystem, VM image) and probes.
"$venv/bin/virtbench" setup

if [ "$run_campaign" = 1 ]; then
  "$venv/bin/virtbench" run
fi
