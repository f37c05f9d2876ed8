#!/usr/bin/env bash
# Run edgebayes's tests on Raspberry Pi OS's platform (Debian bookworm, arm64 or armhf) under
# qemu user-mode emulation.
#
# Builds once, with debootstrap, a Debian bookworm root per architecture holding what a Pi user
# has (Debian's python3, python3-venv, mosquitto), cached under $EDGEBAYES_PI_CACHE. Each run
# starts from that clean root (an overlay: nothing a run installs sticks), copies in the working
# tree, runs deploy/install.sh in it as a Pi user would (venv under /opt/edgebayes, numpy and
# friends from the package index's wheels for the platform), adds the test extra, and runs the
# unit tests plus the end-to-end runtime test(s) with Mosquitto inside the root. Prints pytest's
# per-test summary and the time of each step. Exit status 0 when every architecture asked for
# passed.
#
#   deploy/pi/check.sh               # arm64: 64-bit Raspberry Pi OS (Zero 2 W, 3, 4, 5)
#   deploy/pi/check.sh armhf         # 32-bit Raspberry Pi OS
#   deploy/pi/check.sh arm64 armhf
#
# Needs root and: apt-get install -y debootstrap qemu-user-static binfmt-support
# Environment: EDGEBAYES_PI_CACHE (default /var/cache/edgebayes-pi), EDGEBAYES_PI_MIRROR (Debian
# mirror), EDGEBAYES_PI_NICE (niceness of the emulated work, default 19), EDGEBAYES_PI_E2E,
# EDGEBAYES_PI_EXCLUDE and EDGEBAYES_PI_ONLY (override the selection below), EDGEBAYES_PI_FOOTPRINT=0 (skip the
# footprint measurement, deploy/pi/footprint.py, run after the tests), EDGEBAYES_PI_KEEP=1 (keep
# the run's overlay for a look afterwards).
set -euo pipefail

# --- test selection (fnmatch patterns on pytest node ids, space-separated) ---------------------
# Every test under tests/ that uses no broker fixture (see select_tests.py) and matches no EXCLUDE
# pattern (tests that start brokers of their own), plus the end-to-end tests matching E2E, which
# run against Mosquitto inside the emulated root. E2E='' runs none.
E2E_DEFAULT="tests/test_runtime_e2e.py::test_inline_labels_predictions_equal_the_offline_models"
E2E="${EDGEBAYES_PI_E2E-$E2E_DEFAULT}"
# test_report runs River (the bench extra, not installed on a Pi). The 200,000-sample SRP budget
# test takes ~3 minutes natively, most of an hour emulated; its platform-dependent part (memory
# accounting) is covered by the other tests of test_memory.py.
EXCLUDE_DEFAULT="tests/test_deploy_mosquitto.py::* tests/test_report.py::*
  tests/test_demo.py::test_demo_learning_beats_the_baselines_once_the_label_sensor_is_gone
  tests/test_memory.py::test_srp_of_10_stays_in_256_kib_over_agr_a_within_3_points_of_unbounded"
EXCLUDE="${EDGEBAYES_PI_EXCLUDE-$EXCLUDE_DEFAULT}"
# ONLY, when not empty, narrows the broker-free part to the tests matching one of its patterns
# (e.g. the learners': "tests/test_naive_bayes.py::* tests/test_tree.py::* ...").
ONLY="${EDGEBAYES_PI_ONLY-}"

SUITE=bookworm
CACHE="${EDGEBAYES_PI_CACHE:-/var/cache/edgebayes-pi}"
MIRROR="${EDGEBAYES_PI_MIRROR:-http://deb.debian.org/debian}"
NICE="${EDGEBAYES_PI_NICE:-19}"
PACKAGES=python3,python3-venv,mosquitto,ca-certificates
# No armv7 wheels of numpy or msgpack exist on PyPI (Raspberry Pi OS gets them from piwheels):
# install.sh takes Debian's builds on armhf; the cached root has them already, to save time.
PACKAGES_armhf=python3-numpy,python3-msgpack
VENV=/opt/edgebayes/venv
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SHARED="$(cd "$REPO/../shared" 2>/dev/null && pwd || true)"

say() { printf '[pi-check %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { say "ERROR: $*"; exit 2; }
qemu_name() {
  case "$1" in
    arm64) echo aarch64 ;;
    armhf) echo arm ;;
    *) die "unknown architecture $1 (arm64 or armhf)" ;;
  esac
}

# The kernel must run foreign binaries through qemu for every process in the root (pip, pytest,
# mosquitto), so binfmt_misc is needed; Debian registers qemu with the F flag (interpreter opened
# at registration), so no qemu binary has to be copied into the root.
ensure_binfmt() {
  local q; q="$(qemu_name "$1")"
  command -v debootstrap >/dev/null && [ -x "/usr/bin/qemu-$q-static" ] ||
    die "needs debootstrap and qemu: apt-get install -y debootstrap qemu-user-static binfmt-support"
  mountpoint -q /proc/sys/fs/binfmt_misc ||
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc ||
    die "cannot mount binfmt_misc: foreign binaries cannot run here (a container without it?)"
  [ -e "/proc/sys/fs/binfmt_misc/qemu-$q" ] || update-binfmts --enable "qemu-$q" ||
    die "cannot register qemu-$q with binfmt_misc"
  grep -q '^flags:.*F' "/proc/sys/fs/binfmt_misc/qemu-$q" ||
    die "qemu-$q is registered without the F flag: a chroot would not find the interpreter"
}

# The cached root: built in ROOT.partial and renamed when complete, so an interrupted build is
# never taken for a finished one.
build_root() {
  local arch="$1" root="$CACHE/$SUITE-$1" t0=$SECONDS pkgs="$PACKAGES"
  if [ -e "$root/.edgebayes-pi-ready" ]; then
    say "$arch: cached root $root"
    return
  fi
  extra="PACKAGES_$arch"; [ -n "${!extra:-}" ] && pkgs="$pkgs,${!extra}"
  say "$arch: building $root with debootstrap (once; several minutes under emulation)"
  mkdir -p "$CACHE"
  rm -rf "$root.partial"
  nice -n "$NICE" debootstrap --arch="$arch" --variant=minbase --include="$pkgs" \
    "$SUITE" "$root.partial" "$MIRROR" >"$CACHE/debootstrap-$arch.log" 2>&1 ||
    die "debootstrap failed, see $CACHE/debootstrap-$arch.log"
  rm -rf "$root.partial/var/cache/apt/archives/"*.deb
  date -u +%FT%TZ >"$root.partial/.edgebayes-pi-ready"
  mv "$root.partial" "$root"
  say "$arch: root built in $((SECONDS - t0)) s"
}

# What runs inside the root, as root, with a clean environment: deploy/install.sh itself (apt,
# user, venv under /opt/edgebayes with Debian's python3 -m venv, pip from the package index),
# the test extra on top, the tests, the footprint.
inner_script() {
  cat <<'EOF'
set -euo pipefail
say() { printf '[pi-check %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
cd /srv/edgebayes/main
say "$ARCH: $(python3 --version), $(uname -m), glibc $(ldd --version | head -1 | awk '{print $NF}')"
stamp() { while IFS= read -r line; do printf '%(%s)T %s\n' -1 "$line"; done; }
# seconds between pip's "WHAT: started" and "WHAT: finished" lines in the stamped install log
span() {
  awk -v what="$1" 'index($0, what ": started") && !s { s = $1 }
    index($0, what ": finished") && s && !e { e = $1 }
    END { if (s && e) print e - s; else print "?" }' /tmp/install.log
}
t0=$SECONDS
# what a Pi user runs (sudo deploy/install.sh); no systemd in the root: the unit is only installed.
# PIP_VERBOSE=1 cancels install.sh's --quiet: pip's "started"/"finished" lines time the build.
PIP_VERBOSE=1 deploy/install.sh 2>&1 | stamp | tee /tmp/install.log | cut -d' ' -f2- |
  grep -v -e '^ *\(Downloading\|Requirement already\|Using cached\|Looking in\|Collecting\)' |
  sed 's/^/    /'
say "$ARCH: deploy/install.sh in $((SECONDS - t0)) s (apt packages, compiler included; venv; edgebayes built and installed)"
say "$ARCH: building edgebayes inside it: build dependencies (setuptools, Cython) $(span 'Installing build dependencies') s, cythonize $(span 'Getting requirements to build wheel') s, compile and link $(span 'Building wheel for edgebayes (pyproject.toml)') s"
# the installed package, seen from outside the checkout: the compiled core must be there
cd /
if ! "$VENV/bin/python" - <<'PY'
import edgebayes, pathlib, sys
core = pathlib.Path(edgebayes.__file__).parent / "_core"
print("    installed:", edgebayes.__file__)
print("    compiled core:", " ".join(sorted(p.name for p in core.glob("*.so"))) or "none")
print("    backend:", edgebayes.backend_description())
sys.exit(edgebayes.backend() != "compiled")
PY
then
  say "$ARCH: FAIL: deploy/install.sh did not give the compiled backend (see above)"
  exit 1
fi
core=$("$VENV/bin/python" -c 'import edgebayes._core, os; print(os.path.dirname(edgebayes._core.__file__))')
cd /srv/edgebayes/main
# pytest imports edgebayes from the checkout (its folder is on sys.path): give it the extension
# modules install.sh built, so that the tests run the installed binaries
cp "$core"/*.so edgebayes/_core/
"$VENV/bin/python" -c 'import edgebayes; print("    backend from the checkout:", edgebayes.backend_description())'
t0=$SECONDS
if [ "$ARCH" = armhf ]; then
  # cryptography (test extra) needs cffi >= 2.0, which has no armv7 wheel on PyPI (Debian's
  # python3-cffi is 1.15): pip builds it with the compiler install.sh brought, given libffi's headers
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libffi-dev >/dev/null
fi
# the test extra's requirements only: `pip install .[test]` would build edgebayes again
mapfile -t test_reqs < <("$VENV/bin/python" -c '
import importlib.metadata as md
for r in md.requires("edgebayes") or []:
    if "extra == \"test\"" in r:
        print(r.split(";")[0].strip())')
"$VENV/bin/pip" install --quiet "${test_reqs[@]}"
say "$ARCH: the test extra (${test_reqs[*]}) in $((SECONDS - t0)) s"
if [ "$ARCH" = armhf ]; then
  # why install.sh takes Debian's numpy and msgpack there: pip's own answer, printed as is
  platform=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_platform())')
  for pkg in numpy msgpack; do
    say "armhf: wheels of $pkg on the package index for $platform:"
    "$VENV/bin/pip" download --quiet --no-deps --only-binary=:all: -d /tmp/wheelcheck "$pkg" 2>&1 |
      sed 's/^/    /' || true
  done
fi
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md, platform
names = ("edgebayes", "numpy", "msgpack", "paho-mqtt", "tqdm", "pytest", "hypothesis")
print("    installed:", ", ".join(f"{n} {md.version(n)}" for n in names), "on", platform.machine())
PY
t0=$SECONDS
rc=0
# EDGEBAYES_REQUIRE_COMPILED=1: the compiled half of the backend-parametrised tests fails, not
# skips, if the core is missing; select_tests prints the outcomes per backend at the end
PYTHONPATH=/srv/edgebayes/main/deploy/pi EDGEBAYES_PI_E2E_COUNT_FILE=/tmp/e2e-count \
  EDGEBAYES_REQUIRE_COMPILED=1 "$VENV/bin/python" -m pytest -p select_tests -p no:cacheprovider -q -rA --durations=5 tests ||
  rc=$?
say "$ARCH: tests in $((SECONDS - t0)) s (pytest exit $rc)"
n_e2e=$(cat /tmp/e2e-count 2>/dev/null || echo 0)
if [ -n "$EDGEBAYES_PI_E2E" ] && [ "$n_e2e" = 0 ]; then
  say "$ARCH: FAIL: no end-to-end test matched EDGEBAYES_PI_E2E='$EDGEBAYES_PI_E2E'"
  rc=1
fi
if [ "$FOOTPRINT" = 1 ]; then
  say "$ARCH: footprint under emulation (qemu's own memory included; times are not a Pi's):"
  "$VENV/bin/python" deploy/pi/footprint.py 2>&1 | sed 's/^/    /' || say "$ARCH: footprint failed"
fi
exit $rc
EOF
}

# Runs in a private mount namespace (see main): every mount vanishes with it, even on a kill.
run_inside() {
  local arch="$1" run="$2" root="$CACHE/$SUITE-$1" m="$2/merged"
  mount -t overlay overlay -o "lowerdir=$root,upperdir=$run/upper,workdir=$run/work" "$m"
  mount -t proc proc "$m/proc"
  mount -t sysfs -o ro sysfs "$m/sys"
  mount --bind /dev "$m/dev"
  mount --bind /dev/pts "$m/dev/pts"
  mount -t tmpfs tmpfs "$m/tmp"
  mkdir -p "$m/srv/edgebayes/main" "$m/srv/edgebayes/shared"
  # the working tree as git sees it (tracked and untracked files, not the ignored ones)
  git -C "$REPO" ls-files -z --cached --others --exclude-standard |
    (cd "$REPO" && xargs -0 tar -cf - --ignore-failed-read 2>/dev/null) |
    tar -xf - -C "$m/srv/edgebayes/main"
  [ -n "$SHARED" ] && mount --bind -o ro "$SHARED" "$m/srv/edgebayes/shared"
  cp /etc/resolv.conf "$m/etc/resolv.conf"
  # pip trusts what this host trusts (a proxy's CA, if any); the root's own store is untouched
  cp /etc/ssl/certs/ca-certificates.crt "$m/etc/ssl/host-ca-bundle.crt"
  inner_script | nice -n "$NICE" chroot "$m" /usr/bin/env -i \
    PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root LANG=C.UTF-8 TERM=dumb \
    ARCH="$arch" VENV="$VENV" \
    PIP_CERT=/etc/ssl/host-ca-bundle.crt PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    PIP_DEFAULT_TIMEOUT=120 EDGEBAYES_PI_E2E="$E2E" EDGEBAYES_PI_EXCLUDE="$EXCLUDE" \
    EDGEBAYES_PI_ONLY="$ONLY" \
    FOOTPRINT="${EDGEBAYES_PI_FOOTPRINT:-1}" \
    /bin/bash -s
}

check_arch() {
  local arch="$1" t0=$SECONDS run rc=0
  ensure_binfmt "$arch"
  build_root "$arch"
  run="$(mktemp -d "$CACHE/run-$arch.XXXXXX")"
  mkdir -p "$run/upper" "$run/work" "$run/merged"
  say "$arch: run in $run (overlay on the cached root)"
  unshare --mount --propagation private "$0" __inside "$arch" "$run" || rc=$?
  if [ "${EDGEBAYES_PI_KEEP:-0}" = 1 ]; then say "$arch: kept $run"; else rm -rf "$run"; fi
  say "$arch: $([ $rc = 0 ] && echo PASS || echo FAIL) in $((SECONDS - t0)) s"
  return $rc
}

main() {
  if [ "${1:-}" = __inside ]; then run_inside "$2" "$3"; return; fi
  [ "$(id -u)" = 0 ] || die "run as root (debootstrap, chroot and mounts need it)"
  local archs=("$@") failed=()
  [ ${#archs[@]} -gt 0 ] || archs=(arm64)
  [ -n "$SHARED" ] || say "warning: $REPO/../shared not found: tests reading shared data will fail"
  for arch in "${archs[@]}"; do
    qemu_name "$arch" >/dev/null
    check_arch "$arch" || failed+=("$arch")
  done
  if [ ${#failed[@]} -gt 0 ]; then say "FAILED: ${failed[*]}"; exit 1; fi
  say "PASSED: ${archs[*]}"
}

main "$@"; exit  # on one line: bash never reads past it, even if this file is edited mid-run
