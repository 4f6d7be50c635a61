#!/bin/bash
# What the host's TCP congestion control costs a server that sends through a bridge
# (docs/network.md): nginx under a 50 % CPU quota in a namespace on a bridge, or on loopback,
# wrk from the host, bbr against cubic side by side; prints req/s, the server's CPU and the
# bridge's bbr/cubic ratio per reply size. Changes the host's congestion control while it
# runs and puts the old one back. Run under the machine lock:
#   flock /tmp/vb-measure.lock bench/tcp_cc_bridge.sh [SIZES_KB...]   (default 1 10 30 50)
set -eu
SIZES=${*:-1 10 30 50}
NAME=vbccb; NS=$NAME; BR=${NAME}0; ADDR=10.251.0.2; DIR=$(mktemp -d /tmp/$NAME.XXXXXX)
OLD_CC=$(sysctl -n net.ipv4.tcp_congestion_control)
if [ -d /sys/fs/cgroup/cpu ] && [ -d /sys/fs/cgroup/cpuacct ]; then  # v1: two hierarchies
  CGS="/sys/fs/cgroup/cpu/$NAME /sys/fs/cgroup/cpuacct/$NAME"; V=1
else
  CGS="/sys/fs/cgroup/$NAME"; V=2
fi
cleanup() {
  pkill -f "$DIR/nginx.conf" 2>/dev/null || true; sleep 1
  sysctl -qw net.ipv4.tcp_congestion_control="$OLD_CC"
  for c in $CGS; do rmdir "$c" 2>/dev/null || true; done
  ip netns del $NS 2>/dev/null || true; ip link del $BR 2>/dev/null || true; rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # stop measuring; EXIT then cleans up once
mkdir -p $CGS
if [ $V = 1 ]; then
  echo 100000 > /sys/fs/cgroup/cpu/$NAME/cpu.cfs_period_us
  echo 50000 > /sys/fs/cgroup/cpu/$NAME/cpu.cfs_quota_us
  usage() { echo $(( $(cat /sys/fs/cgroup/cpuacct/$NAME/cpuacct.usage) / 1000 )); }
else
  echo "50000 100000" > /sys/fs/cgroup/$NAME/cpu.max
  usage() { awk '/^usage_usec/{print $2}' /sys/fs/cgroup/$NAME/cpu.stat; }
fi
ip link add $BR type bridge; ip addr add 10.251.0.1/24 dev $BR; ip link set $BR up
ip netns add $NS; ip link add ${NAME}-h type veth peer name eth0 netns $NS
ip link set ${NAME}-h master $BR up
ip -n $NS addr add $ADDR/24 dev eth0; ip -n $NS link set eth0 up; ip -n $NS link set lo up
mkdir -p "$DIR/www" "$DIR/tmp"
for kb in $SIZES; do head -c $((kb * 1024)) /dev/urandom > "$DIR/www/f${kb}k.bin"; done

serve() {  # ADDR PREFIX... : nginx on ADDR, in the quota'd cgroup
  cat > "$DIR/nginx.conf" <<CONF
daemon off; master_process on; user root; worker_processes 2; pid $DIR/nginx.pid;
error_log $DIR/error.log warn; events { worker_connections 16384; }
http { access_log off; sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 1000000; keepalive_timeout 65; client_body_temp_path $DIR/tmp;
  server { listen $1:18080 backlog=4096; root $DIR/www; } }
CONF
  shift; "$@" nginx -p "$DIR" -c "$DIR/nginx.conf" & sleep 1
  local m; m=$(pgrep -f "$DIR/nginx.conf" | head -1)
  for p in $m $(pgrep -P "$m"); do for c in $CGS; do echo "$p" > "$c/cgroup.procs"; done; done
}
declare -A RATE
for cc in bbr cubic; do
  sysctl -qw net.ipv4.tcp_congestion_control=$cc
  ip netns exec $NS sysctl -qw net.ipv4.tcp_congestion_control=$cc
  for path in loopback bridge; do
    if [ $path = loopback ]; then serve 127.0.0.1; host=127.0.0.1
    else serve $ADDR ip netns exec $NS; host=$ADDR; fi
    for kb in $SIZES; do
      u0=$(usage); t0=$(date +%s%N)
      r=$(wrk -t1 -c32 -d3s "http://$host:18080/f${kb}k.bin" | awk '/Requests\/sec/{print $2}')
      u1=$(usage); t1=$(date +%s%N)
      RATE[$path,$cc,$kb]=$r
      printf '%-8s %-5s %4s KB  %10.0f req/s  server CPU %5.1f %%\n' $path $cc "$kb" "$r" \
        "$(echo "100000 * ($u1 - $u0) / ($t1 - $t0)" | bc -l)"
    done
    pkill -f "$DIR/nginx.conf"; sleep 1
  done
done
for kb in $SIZES; do
  printf 'bridge bbr/cubic %4s KB: %.2f   loopback: %.2f\n' "$kb" \
    "$(echo "${RATE[bridge,bbr,$kb]} / ${RATE[bridge,cubic,$kb]}" | bc -l)" \
    "$(echo "${RATE[loopback,bbr,$kb]} / ${RATE[loopback,cubic,$kb]}" | bc -l)"
done
