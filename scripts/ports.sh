# Sourced by scripts/run.sh and scripts/pg.sh: whether a listen address is taken, and
# by whom, before anything is started on it.

# dial_host ADDR prints the host a client dials for the listen address ADDR
# (host:port): 127.0.0.1 for an empty or unspecified host, brackets removed.
dial_host() {
  local host=${1%:*}
  host=${host#[}
  host=${host%]}
  case $host in '' | 0.0.0.0 | ::) echo 127.0.0.1 ;; *) echo "$host" ;; esac
}

# url_of ADDR prints the http:// URL a client uses for the listen address ADDR.
url_of() {
  local host
  host=$(dial_host "$1")
  case $host in *:*) host="[$host]" ;; esac
  echo "http://$host:${1##*:}"
}

# in_use ADDR succeeds when something accepts connections on ADDR; it gives up after
# 2 s, so an address that swallows packets cannot stall the caller.
in_use() {
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$(dial_host "$1")" "${1##*:}" 2>/dev/null
}

# holder PORT prints "pid N, NAME" of the process listening on PORT, or
# "another program" when ss cannot tell (not installed, or the process is another
# user's).
holder() {
  local who
  who=$(ss -Hltnp "sport = :$1" 2>/dev/null | grep -o 'users:(("[^"]*",pid=[0-9]*' | head -n 1) || true
  if [ -z "$who" ]; then
    echo "another program"
    return
  fi
  local name=${who#users:((\"}
  name=${name%%\"*}
  echo "pid ${who##*pid=}, $name"
}

# free_near ADDR prints a listen address on ADDR's host whose port nothing answers
# on, searching upwards from ADDR's port + 10000.
free_near() {
  local host=${1%:*} port=$((${1##*:} + 10000))
  while [ "$port" -lt 65535 ] && in_use "$host:$port"; do port=$((port + 1)); done
  echo "$host:$port"
}

# require_free TAG VARIABLE ADDR fails, naming ADDR's holder and the variable that
# moves it, when ADDR is in use.
require_free() {
  in_use "$3" || return 0
  echo "$1: $3 is already in use (by $(holder "${3##*:}")); set $2 to a free address, e.g. $2=$(free_near "$3")" >&2
  exit 1
}
