#!/usr/bin/env bash
# Install edgebayes as a systemd service on Raspberry Pi OS / Debian bookworm (arm64, armhf,
# amd64), from this checkout:
#
#   sudo deploy/install.sh              # install or update (safe to run again)
#   sudo deploy/install.sh --no-broker  # the runtime only: you run the broker elsewhere
#   deploy/install.sh --dry-run         # print what would be done, change nothing
#   sudo deploy/install.sh --uninstall  # remove the service, the venv and the broker snippet
#   sudo deploy/install.sh --uninstall --purge   # ... and the config, checkpoints, user, passwords
#   deploy/install.sh --root DIR        # files only, into DIR as if it were / (tests)
#
# Options: --yes (go on where the install would lock clients out of a broker you already run:
# without it the install asks, or stops when nobody can answer); --ha-user NAME (Home
# Assistant's MQTT user, default homeassistant; '' for none) and --bridge-user NAME
# (zigbee2mqtt's, default zigbee2mqtt): the users the generated ACL grants.
#
# A broker you already run (Home Assistant, zigbee2mqtt, Tasmota) is joined, not replaced: the
# settings it already has (a listener on 1883, password_file, acl_file, allow_anonymous) are
# kept and left out of the installed conf.d/edgebayes.conf (commented, with the file that has
# them); the runtime's user goes into the broker's password file; the ACL made from the config
# goes between the "edgebayes" markers of the broker's acl_file (else of
# /etc/mosquitto/edgebayes.acl): a run rewrites only those lines, the rest of the file is yours.
# Turning anonymous access off, or adding an ACL to a broker that had none, locks out the
# clients that relied on it: the install says so and asks first (--yes). --dry-run lists
# every change to the broker's files. For a broker you would rather change by hand, use
# --no-broker and README's "I already run Home Assistant and Mosquitto".
#
# --root DIR: every path is under DIR; no apt, no user, no venv or pip, no systemctl, and owners
# set only where the user or group exists. The ACL is made by `python3 -m edgebayes acl` from
# this checkout (PYTHONPATH) when DIR has no venv.
#
# What it does: apt packages (python3-venv, mosquitto, and build-essential and python3-dev to
# build the compiled core: without them it goes on, and edgebayes runs on its pure-Python
# reference); a system user "edgebayes"; a venv under /opt/edgebayes with edgebayes
# pip-installed from this checkout, and which backend it got; the config in /etc/edgebayes
# (an existing one is never overwritten); the local Mosquitto configured from deploy/mosquitto
# (no anonymous access, a generated password for the runtime, and an ACL made from the config
# by `edgebayes acl`, which admits its [[sources]] topics); the systemd unit
# installed, enabled and (re)started. deploy/pi/check.sh mirrors the venv steps
# (create_venv, pip_install_edgebayes) to test them under arm64 emulation.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
PREFIX=/opt/edgebayes
VENV="$PREFIX/venv"
ETC=/etc/edgebayes
CONFIG="$ETC/edgebayes.toml"
PASSWORD_FILE="$ETC/mqtt-password"
STATE=/var/lib/edgebayes
UNIT=/etc/systemd/system/edgebayes.service
SERVICE_USER=edgebayes
MOSQUITTO_MAIN=/etc/mosquitto/mosquitto.conf
MOSQUITTO_CONF=/etc/mosquitto/conf.d/edgebayes.conf
MOSQUITTO_ACL=/etc/mosquitto/edgebayes.acl
MOSQUITTO_PASSWD=/etc/mosquitto/edgebayes.passwd
# the generated part of the ACL file: a run rewrites the lines between these, and no other
ACL_BEGIN="# >>> edgebayes: made by deploy/install.sh from $CONFIG (edgebayes acl); edits here are lost"
ACL_END="# <<< edgebayes: your own lines go above this block"

DRY_RUN=0
ACTION=install
BROKER=1
PURGE=0
YES=0
R=""  # --root DIR: where / is
HA_USER=homeassistant
BRIDGE_USER=zigbee2mqtt

say() { printf '[edgebayes-install] %s\n' "$*"; }
die() { say "ERROR: $*" >&2; exit 1; }

# Run a command, or print it under --dry-run.
run() {
  if [ "$DRY_RUN" = 1 ]; then
    printf '+ %s\n' "$*"
  else
    "$@"
  fi
}

# Write stdin to a file (mode, owner:group), or print what would be written under --dry-run.
write_file() {
  local path="$1" mode="$2" owner="$3"
  if [ "$DRY_RUN" = 1 ]; then
    printf '+ write %s (mode %s, owner %s)\n' "$path" "$mode" "$owner"
    cat >/dev/null
  else
    (umask 077 && cat >"$path")
    set_owner "$owner" "$path"
    chmod "$mode" "$path"
  fi
}

# chown, where that user and group exist (under --root they may not: files only)
set_owner() {
  local owner="$1" path="$2"
  if [ -n "$R" ] && { ! getent passwd "${owner%%:*}" >/dev/null || ! getent group "${owner##*:}" >/dev/null ||
    [ "$(id -u)" != 0 ]; }; then
    say "--root: owner $owner of $path not set"
    return 0
  fi
  run chown "$owner" "$path"
}

have_systemd() { [ -z "$R" ] && [ -d /run/systemd/system ]; }

systemctl_or_note() {
  if have_systemd; then
    run systemctl "$@"
  elif [ -n "$R" ]; then
    say "--root: skipped 'systemctl $*'"
  else
    say "systemd is not running here: skipped 'systemctl $*'"
  fi
}

# the comment block at the top of this file, up to its first line of code
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

parse_args() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --dry-run) DRY_RUN=1 ;;
      --uninstall) ACTION=uninstall ;;
      --purge) PURGE=1 ;;
      --no-broker) BROKER=0 ;;
      --yes) YES=1 ;;
      --root) [ $# -ge 2 ] || die "--root needs a folder"; R="$(cd "$2" && pwd)" || die "no folder $2"; shift ;;
      --ha-user) [ $# -ge 2 ] || die "--ha-user needs a name"; HA_USER="$2"; shift ;;
      --bridge-user) [ $# -ge 2 ] || die "--bridge-user needs a name"; BRIDGE_USER="$2"; shift ;;
      -h | --help) usage; exit 0 ;;
      *) usage >&2; die "unknown option $1" ;;
    esac
    shift
  done
  if [ "$PURGE" = 1 ] && [ "$ACTION" != uninstall ]; then
    die "--purge goes with --uninstall"
  fi
  if [ "$DRY_RUN" = 0 ] && [ -z "$R" ] && [ "$(id -u)" != 0 ]; then
    die "run as root (sudo), or with --dry-run"
  fi
}

check_platform() {
  local arch
  arch="$(dpkg --print-architecture 2>/dev/null || uname -m)"
  case "$arch" in
    arm64 | amd64 | armhf) say "platform: Debian $arch" ;;
    *) say "warning: $arch is not tested (arm64, armhf and amd64 are)" ;;
  esac
  ARCH="$arch"
}

install_packages() {
  local packages=(python3 python3-venv)
  [ "$BROKER" = 1 ] && packages+=(mosquitto)
  # no armv7 wheels of numpy and msgpack on PyPI: Debian's, seen through the venv
  [ "$ARCH" = armhf ] && packages+=(python3-numpy python3-msgpack)
  run apt-get update -qq
  run env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}"
  # the compiled core's build (setup.py): optional, as without a compiler pip installs the
  # pure-Python reference (report_backend says which one the service runs)
  run env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential python3-dev ||
    say "warning: build-essential and python3-dev not installed: edgebayes will run on its pure-Python reference"
}

check_python() {
  [ "$DRY_RUN" = 1 ] && ! command -v python3 >/dev/null && return 0
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    die "edgebayes needs Python >= 3.11 (Debian bookworm or later); found $(python3 -V 2>&1)"
}

create_user() {
  if id -u "$SERVICE_USER" >/dev/null 2>&1; then
    say "user $SERVICE_USER exists"
  else
    run useradd --system --user-group --home-dir "$STATE" --no-create-home \
      --shell /usr/sbin/nologin "$SERVICE_USER"
  fi
}

# The venv under /opt/edgebayes (Debian's python3 -m venv; on armhf it also sees Debian's numpy).
create_venv() {
  local flags=()
  [ "$ARCH" = armhf ] && flags+=(--system-site-packages)
  if [ -x "$VENV/bin/python" ]; then
    say "venv $VENV exists"
  else
    run install -d -m 0755 "$PREFIX"
    run python3 -m venv "${flags[@]}" "$VENV"
  fi
}

# edgebayes from this checkout (a regular install, not editable: the checkout may go away).
pip_install_edgebayes() {
  run "$VENV/bin/pip" install --quiet --upgrade pip
  run "$VENV/bin/pip" install --quiet --upgrade "$REPO"
  run install -m 0644 "$REPO/README.md" "$PREFIX/README.md"
  report_backend
}

# Which implementation the service gets: pip hides the build's warnings when the compiled core
# cannot be built (no C compiler), so say it here.
report_backend() {
  local description
  if [ "$DRY_RUN" = 1 ]; then
    printf '+ %s\n' "$VENV/bin/python -c 'import edgebayes; print(edgebayes.backend_description())'"
    return 0
  fi
  description="$(cd / && "$VENV/bin/python" -c 'import edgebayes; print(edgebayes.backend_description())')" ||
    die "edgebayes does not import from $VENV"
  if [ "$description" = compiled ]; then
    say "backend: compiled (edgebayes._core built for this machine)"
  else
    say "warning: backend $description"
    say "warning: edgebayes runs on its pure-Python reference (same results, slower); for the compiled core: apt-get install build-essential python3-dev, then run this again"
  fi
}

install_config() {
  run install -d -m 0750 "$R$ETC"
  set_owner "root:$SERVICE_USER" "$R$ETC"
  if [ -e "$R$CONFIG" ]; then
    say "kept the existing $R$CONFIG (the new example: $REPO/deploy/edgebayes.toml)"
  else
    run install -m 0640 "$REPO/deploy/edgebayes.toml" "$R$CONFIG"
    set_owner "root:$SERVICE_USER" "$R$CONFIG"
  fi
}

# The broker's own settings that ours would meet, one "FILE KEY VALUE" line each: from
# mosquitto.conf and the files of its include_dir (conf.d) but ours.
broker_settings() {
  local main="$R$MOSQUITTO_MAIN" files=() dir f
  [ -e "$main" ] || return 0
  files+=("$main")
  while read -r dir; do
    for f in "$R$dir"/*.conf; do
      [ -e "$f" ] && [ "$f" != "$R$MOSQUITTO_CONF" ] && files+=("$f")
    done
  done < <(awk '$1 == "include_dir" { print $2 }' "$main")
  awk '$1 ~ /^(listener|port|allow_anonymous|password_file|acl_file|per_listener_settings)$/ { print FILENAME, $1, $2 }' \
    "${files[@]}"
}

# What the broker already has (THEIR_*: "FILE VALUE" or empty), read before anything is changed.
scan_broker() {
  local settings
  settings="$(broker_settings)"
  THEIR_LISTENER="$(awk '($2 == "listener" || $2 == "port") && $3 == 1883 { print $1; exit }' <<<"$settings")"
  THEIR_PASSWD="$(awk '$2 == "password_file" { v = $3 } END { print v }' <<<"$settings")"
  THEIR_ACL="$(awk '$2 == "acl_file" { v = $3 } END { print v }' <<<"$settings")"
  THEIR_ANON="$(awk '$2 == "allow_anonymous" { v = $3 } END { print v }' <<<"$settings")"
  local per_listener any_listener
  per_listener="$(awk '$2 == "per_listener_settings" && $3 == "true" { print $1; exit }' <<<"$settings")"
  # each listener then has its own password_file and acl_file: which one to join is the user's call
  [ -z "$per_listener" ] ||
    die "$per_listener sets per_listener_settings true: join that broker by hand (--no-broker; README: \"I already run Home Assistant and Mosquitto\")"
  any_listener="$(awk '$2 == "listener" || $2 == "port" { print; exit }' <<<"$settings")"
  OURS_BEFORE=0
  [ -e "$R$MOSQUITTO_CONF" ] && OURS_BEFORE=1
  # Mosquitto 2.0 with no listener at all serves localhost, anonymous (Debian's default file)
  ANON_BEFORE=0
  if [ "$THEIR_ANON" = true ] || { [ -z "$THEIR_ANON" ] && [ -z "$any_listener" ] && [ "$OURS_BEFORE" = 0 ]; }; then
    ANON_BEFORE=1
  fi
}

# conf.d/edgebayes.conf: the shipped file, with each setting the broker already has commented out
# (Mosquitto refuses a second password_file or acl_file and a second listener on 1883 cannot bind).
broker_conf_text() {
  local keep_listener=1
  [ -n "$THEIR_LISTENER" ] && keep_listener=0
  awk -v keep_listener="$keep_listener" -v their_listener="$THEIR_LISTENER" -v passwd="$THEIR_PASSWD" \
    -v acl="$THEIR_ACL" -v anon="$THEIR_ANON" '
    { why = "" }
    !keep_listener && $1 == "listener" && $2 == 1883 { why = "your " their_listener " has listener 1883" }
    !keep_listener && $1 == "use_username_as_clientid" {
      why = "goes after your listener 1883 in " their_listener " (not written there by the install)" }
    !keep_listener && $1 == "message_size_limit" {
      why = "would drop larger messages of every client of yours (camera snapshots, ...): add it if none sends them" }
    passwd != "" && $1 == "password_file" { why = "yours: " passwd " (the runtime user is added there)" }
    acl != "" && $1 == "acl_file" { why = "yours: " acl " (the generated ACL is added there)" }
    anon != "" && $1 == "allow_anonymous" { why = "yours: allow_anonymous " anon " is kept" }
    why != "" { print "# " $0 "    # edgebayes install: " why; next }
    { print }' "$REPO/deploy/mosquitto/edgebayes.conf"
}

# Every change to the broker's files, and what would lock a client out (LOCKOUT, one per line).
plan_broker() {
  local acl="${THEIR_ACL:-$MOSQUITTO_ACL}" passwd="${THEIR_PASSWD:-$MOSQUITTO_PASSWD}"
  LOCKOUT=""
  if [ "$PREEXISTING" = 1 ] && [ "$OURS_BEFORE" = 0 ]; then
    say "an existing Mosquitto: $R$MOSQUITTO_MAIN$( [ -n "$THEIR_LISTENER" ] && printf ', listener 1883 in %s' "$THEIR_LISTENER")"
    [ "$ANON_BEFORE" = 1 ] && [ -z "$THEIR_ANON" ] &&
      LOCKOUT+="anonymous clients: allow_anonymous false (they connect anonymously today)"$'\n'
    [ -z "$THEIR_ACL" ] &&
      LOCKOUT+="every user but those the generated ACL grants: an ACL on a broker that had none"$'\n'
  fi
  say "broker change: $R$MOSQUITTO_CONF $( [ "$OURS_BEFORE" = 1 ] && echo rewritten || echo added): $(broker_conf_text | grep -cv '^#\|^$') settings, $(broker_conf_text | grep -c 'edgebayes install:') of the shipped left to your files"
  broker_conf_text | grep 'edgebayes install:' | sed 's/^/  /' || true
  [ -n "$THEIR_LISTENER" ] &&
    say "broker note: add 'use_username_as_clientid true' after 'listener 1883' in $THEIR_LISTENER, or a client using the runtime's client id can take its session"
  say "broker change: $R$passwd: user $SERVICE_USER $( [ -e "$R$passwd" ] && echo added || echo created)"
  say "broker change: $R$acl: the lines between its edgebayes markers $( [ -e "$R$acl" ] && grep -qxF "$ACL_BEGIN" "$R$acl" && echo rewritten || echo added); the rest kept"
  if [ -n "$LOCKOUT" ]; then
    printf '%s' "$LOCKOUT" | while read -r line; do say "broker change locks out $line"; done
  fi
}

# Go on past a lock-out only if the user says so (--yes, or yes at the prompt).
confirm_lockout() {
  [ -n "$LOCKOUT" ] || return 0
  if [ "$DRY_RUN" = 1 ]; then say "would ask before that (or --yes)"; return 0; fi
  [ "$YES" = 1 ] && { say "--yes: going on"; return 0; }
  if [ -t 0 ]; then
    local answer
    read -r -p "[edgebayes-install] lock them out (they need a user, password and ACL grant then)? [y/N] " answer
    case "$answer" in y | Y | yes) return 0 ;; esac
  fi
  die "stopped before locking clients out of your broker (its files are unchanged); run again with --yes, or with --no-broker (README: \"I already run Home Assistant and Mosquitto\")"
}

# The local Mosquitto: our listener and settings, the runtime's password, the ACL.
setup_broker() {
  [ "$BROKER" = 1 ] || { say "--no-broker: set [broker] in $CONFIG to your broker"; return 0; }
  run install -d -m 0755 "$R$(dirname "$MOSQUITTO_CONF")"
  broker_conf_text | write_file "$R$MOSQUITTO_CONF" 0644 root:root
  write_acl
  write_password
  local passwd="${THEIR_PASSWD:-$MOSQUITTO_PASSWD}"
  say "devices: mosquitto_passwd -b $passwd DEVICE_ID PASSWORD (user name = device id)"
  say "watching the topics (firmware-sim monitor, mosquitto_sub -u monitor): mosquitto_passwd -b $passwd monitor PASSWORD"
  if [ -n "$HA_USER" ] && has_user "$R$passwd" "$HA_USER"; then
    say "Home Assistant: its user $HA_USER is in $passwd already (password unchanged); the ACL grants it discovery and the runtime's outputs"
  elif [ -n "$HA_USER" ]; then
    say "Home Assistant: mosquitto_passwd -b $passwd $HA_USER PASSWORD, the same in its MQTT integration"
  fi
  systemctl_or_note enable mosquitto
  systemctl_or_note restart mosquitto
}

# Whether Mosquitto's password file $1 has user $2.
has_user() { [ -r "$1" ] && grep -q "^$2:" "$1"; }

# A generated password for the runtime, in its password file and in the broker's.
write_password() {
  local passwd="$R${THEIR_PASSWD:-$MOSQUITTO_PASSWD}"
  if [ -e "$R$PASSWORD_FILE" ]; then
    say "kept the runtime's existing password ($R$PASSWORD_FILE)"
    return 0
  fi
  local password create=()
  password="<generated>"
  [ "$DRY_RUN" = 1 ] || password="$(head -c 24 /dev/urandom | base64 | tr -d '/+=')"
  printf '%s\n' "$password" | write_file "$R$PASSWORD_FILE" 0640 "root:$SERVICE_USER"
  [ -e "$passwd" ] || create=(-c)
  # the password is on mosquitto_passwd's command line for an instant, as root only
  run mosquitto_passwd "${create[@]}" -b "$passwd" "$SERVICE_USER" "$password"
  if [ -z "$THEIR_PASSWD" ]; then
    set_owner root:mosquitto "$passwd"
    run chmod 0640 "$passwd"
  fi
}

# The ACL admits what the config reads, its [[sources]] topics too: made from the config at every
# install, between the markers; the file's other lines (yours) are kept as they are.
write_acl() {
  local edgebayes="$R$VENV/bin/edgebayes" acl target="$R${THEIR_ACL:-$MOSQUITTO_ACL}" made=()
  made=("$edgebayes" acl)
  if [ -n "$R" ] && [ ! -x "$edgebayes" ]; then
    made=(env "PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH}" python3 -m edgebayes acl)
  fi
  made+=(--config "$R$CONFIG" --ha-user "$HA_USER" --bridge-user "$BRIDGE_USER")
  if [ "$DRY_RUN" = 1 ]; then
    printf '+ %s > the edgebayes block of %s\n' "${made[*]}" "$target"
    return 0
  fi
  acl="$("${made[@]}")" || die "no ACL made from $R$CONFIG (the line above says why)"
  local new
  new="$(acl_with_block "$target" "$acl")"
  if [ -e "$target" ] && printf '%s\n' "$new" | cmp -s - "$target"; then
    say "the ACL in $target is up to date"
    return 0
  fi
  if [ -e "$target" ]; then
    cp -p "$target" "$target.bak"
    say "the previous $target is kept as $target.bak"
  fi
  if [ -n "$THEIR_ACL" ] && [ -e "$target" ]; then
    printf '%s\n' "$new" >"$target"  # in place: the broker's file keeps its owner and mode
  else
    printf '%s\n' "$new" | write_file "$target" 0644 root:root
  fi
}

# The ACL file ($1) with its edgebayes block holding $2: replaced in place, else added at the end.
# A file of ours from before the markers (all of it made by `edgebayes acl`) is made again.
acl_with_block() {
  local target="$1" acl="$2"
  if [ -e "$target" ] && grep -qxF "$ACL_BEGIN" "$target"; then
    awk -v begin="$ACL_BEGIN" -v end="$ACL_END" -v acl="$acl" '
      $0 == begin { print; print acl; skip = 1; next }
      $0 == end { skip = 0 }
      !skip { print }' "$target"
    return 0
  fi
  if [ -e "$target" ] && [ -n "$THEIR_ACL" ]; then
    cat "$target"
    printf '\n'
  else
    printf '%s\n' "# Mosquitto's ACL (acl_file in $MOSQUITTO_CONF). Your own lines go above the edgebayes block:" \
      "# deploy/install.sh rewrites only the lines between its markers and keeps the rest. A topic" \
      "# line before any user line is for anonymous clients; after 'user NAME', for NAME." ""
  fi
  printf '%s\n%s\n%s\n' "$ACL_BEGIN" "$acl" "$ACL_END"
}

install_unit() {
  run install -D -m 0644 "$REPO/deploy/systemd/edgebayes.service" "$R$UNIT"
  systemctl_or_note daemon-reload
  systemctl_or_note enable edgebayes.service
  systemctl_or_note restart edgebayes.service
}

do_install() {
  check_platform
  # a broker that was here before this install may serve others (Home Assistant, ...)
  PREEXISTING=0
  [ -e "$R$MOSQUITTO_MAIN" ] && PREEXISTING=1
  if [ -n "$R" ]; then
    say "--root $R: files only (no apt, user, venv, pip nor systemctl)"
    check_python
  else
    install_packages
    check_python
    create_user
    create_venv
    pip_install_edgebayes
  fi
  if [ "$BROKER" = 1 ]; then
    scan_broker
    plan_broker
    confirm_lockout
  fi
  install_config
  setup_broker
  install_unit
  if [ "$DRY_RUN" = 1 ]; then say "done: nothing was changed"
  elif [ -n "$R" ]; then say "done: files installed under $R (no service started)"
  else say "done: systemctl status edgebayes; journalctl -u edgebayes -f"; fi
  say "next: edit [schema] features (and [[sources]], see docs/examples/) in $CONFIG for your sensors: it is an example for an occupancy node"
  say "check it: $VENV/bin/edgebayes run --config $CONFIG prints one line per problem and exits 2 (with none it runs: Ctrl-C stops it)"
  if [ "$BROKER" = 1 ]; then
    say "then: sudo systemctl restart edgebayes; after changing [[sources]] or [topics], run sudo deploy/install.sh again (it makes the broker's ACL again)"
  else
    say "then: sudo systemctl restart edgebayes; after changing [[sources]], [topics] or [homeassistant], add what 'edgebayes acl --config $CONFIG' prints to your broker's ACL"
  fi
}

do_uninstall() {
  if [ -e "$R$UNIT" ]; then
    systemctl_or_note disable --now edgebayes.service
    run rm -f "$R$UNIT"
    systemctl_or_note daemon-reload
  fi
  run rm -rf "$R$PREFIX"
  if [ -e "$R$MOSQUITTO_CONF" ]; then
    run rm -f "$R$MOSQUITTO_CONF"
    systemctl_or_note try-restart mosquitto
  fi
  if [ "$PURGE" = 1 ]; then
    run rm -rf "$R$ETC" "$R$STATE"
    run rm -f "$R$MOSQUITTO_ACL" "$R$MOSQUITTO_PASSWD"
    if [ -z "$R" ] && id -u "$SERVICE_USER" >/dev/null 2>&1; then
      run userdel "$SERVICE_USER"
    fi
  else
    say "kept $ETC, $STATE (checkpoints), the user and the broker's ACL/passwords (--purge removes them)"
  fi
  say "a broker's own acl_file and password_file keep the edgebayes block and user: remove them by hand if you joined one"
  say "uninstalled"
}

main() {
  parse_args "$@"
  [ "$DRY_RUN" = 1 ] && say "dry run: nothing is changed"
  if [ "$ACTION" = install ]; then do_install; else do_uninstall; fi
}

main "$@"
