#!/usr/bin/env bash
# Install edgebayes as a systemd service on Raspberry Pi OS / Debian bookworm (arm64, armhf,
# amd64), from this checkout:
#
#   sudo deploy/install.sh              # install or update (safe to run again)
#   sudo deploy/install.sh --no-broker  # the runtime only: you run the broker elsewhere
#   deploy/install.sh --dry-run         # print what would be done, change nothing
#   sudo deploy/install.sh --uninstall  # remove the service, the venv and the broker snippet
#   sudo deploy/install.sh --uninstall --purge   # ... and the config, checkpoints, user, passwords
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
MOSQUITTO_CONF=/etc/mosquitto/conf.d/edgebayes.conf
MOSQUITTO_ACL=/etc/mosquitto/edgebayes.acl
MOSQUITTO_PASSWD=/etc/mosquitto/edgebayes.passwd

DRY_RUN=0
ACTION=install
BROKER=1
PURGE=0

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
    chown "$owner" "$path"
    chmod "$mode" "$path"
  fi
}

have_systemd() { [ -d /run/systemd/system ]; }

systemctl_or_note() {
  if have_systemd; then
    run systemctl "$@"
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
      -h | --help) usage; exit 0 ;;
      *) usage >&2; die "unknown option $1" ;;
    esac
    shift
  done
  if [ "$PURGE" = 1 ] && [ "$ACTION" != uninstall ]; then
    die "--purge goes with --uninstall"
  fi
  if [ "$DRY_RUN" = 0 ] && [ "$(id -u)" != 0 ]; then
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
  run install -d -m 0750 -o root -g "$SERVICE_USER" "$ETC"
  if [ -e "$CONFIG" ]; then
    say "kept the existing $CONFIG (the new example: $REPO/deploy/edgebayes.toml)"
  else
    run install -m 0640 -o root -g "$SERVICE_USER" "$REPO/deploy/edgebayes.toml" "$CONFIG"
  fi
}

# The local Mosquitto: our listener, ACL and password file; a password for the runtime.
setup_broker() {
  [ "$BROKER" = 1 ] || { say "--no-broker: set [broker] in $CONFIG to your broker"; return 0; }
  if [ -e "$MOSQUITTO_CONF" ]; then
    say "kept the existing $MOSQUITTO_CONF"
  else
    run install -m 0644 "$REPO/deploy/mosquitto/edgebayes.conf" "$MOSQUITTO_CONF"
  fi
  write_acl
  if [ -e "$PASSWORD_FILE" ]; then
    say "kept the runtime's existing password ($PASSWORD_FILE)"
  else
    local password create=()
    password="<generated>"
    [ "$DRY_RUN" = 1 ] || password="$(head -c 24 /dev/urandom | base64 | tr -d '/+=')"
    printf '%s\n' "$password" | write_file "$PASSWORD_FILE" 0640 "root:$SERVICE_USER"
    [ -e "$MOSQUITTO_PASSWD" ] || create=(-c)
    # the password is on mosquitto_passwd's command line for an instant, as root only
    run mosquitto_passwd "${create[@]}" -b "$MOSQUITTO_PASSWD" "$SERVICE_USER" "$password"
    run chown root:mosquitto "$MOSQUITTO_PASSWD"
    run chmod 0640 "$MOSQUITTO_PASSWD"
  fi
  say "devices: mosquitto_passwd -b $MOSQUITTO_PASSWD DEVICE_ID PASSWORD (user name = device id)"
  systemctl_or_note enable mosquitto
  systemctl_or_note restart mosquitto
}

# The ACL admits what the config reads, its [[sources]] topics too: made from the config at
# every install; a different previous one is kept as .bak.
write_acl() {
  local edgebayes="$VENV/bin/edgebayes" acl
  if [ "$DRY_RUN" = 1 ]; then
    printf '+ %s acl --config %s > %s\n' "$edgebayes" "$CONFIG" "$MOSQUITTO_ACL"
    return 0
  fi
  acl="$("$edgebayes" acl --config "$CONFIG")" || die "no ACL made from $CONFIG (the line above says why)"
  if [ -e "$MOSQUITTO_ACL" ] && ! printf '%s\n' "$acl" | cmp -s - "$MOSQUITTO_ACL"; then
    cp -p "$MOSQUITTO_ACL" "$MOSQUITTO_ACL.bak"
    say "the previous $MOSQUITTO_ACL is kept as $MOSQUITTO_ACL.bak"
  fi
  printf '%s\n' "$acl" | write_file "$MOSQUITTO_ACL" 0644 root:root
}

install_unit() {
  run install -m 0644 "$REPO/deploy/systemd/edgebayes.service" "$UNIT"
  systemctl_or_note daemon-reload
  systemctl_or_note enable edgebayes.service
  systemctl_or_note restart edgebayes.service
}

do_install() {
  check_platform
  install_packages
  check_python
  create_user
  create_venv
  pip_install_edgebayes
  install_config
  setup_broker
  install_unit
  say "done: systemctl status edgebayes; journalctl -u edgebayes -f"
  say "next: edit [schema] features (and [[sources]], see docs/examples/) in $CONFIG for your sensors: it is an example for an occupancy node"
  say "check it: $VENV/bin/edgebayes run --config $CONFIG prints one line per problem and exits 2 (with none it runs: Ctrl-C stops it)"
  say "then: sudo systemctl restart edgebayes; after changing [[sources]] or [topics], run sudo deploy/install.sh again (it makes the broker's ACL again)"
}

do_uninstall() {
  if [ -e "$UNIT" ]; then
    systemctl_or_note disable --now edgebayes.service
    run rm -f "$UNIT"
    systemctl_or_note daemon-reload
  fi
  run rm -rf "$PREFIX"
  if [ -e "$MOSQUITTO_CONF" ]; then
    run rm -f "$MOSQUITTO_CONF"
    systemctl_or_note try-restart mosquitto
  fi
  if [ "$PURGE" = 1 ]; then
    run rm -rf "$ETC" "$STATE"
    run rm -f "$MOSQUITTO_ACL" "$MOSQUITTO_PASSWD"
    if id -u "$SERVICE_USER" >/dev/null 2>&1; then
      run userdel "$SERVICE_USER"
    fi
  else
    say "kept $ETC, $STATE (checkpoints), the user and the broker's ACL/passwords (--purge removes them)"
  fi
  say "uninstalled"
}

main() {
  parse_args "$@"
  [ "$DRY_RUN" = 1 ] && say "dry run: nothing is changed"
  if [ "$ACTION" = install ]; then do_install; else do_uninstall; fi
}

main "$@"
