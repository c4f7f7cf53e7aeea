#!/usr/bin/env bash
# Set everything up and run every test: the readers, the explorer, the
# benchmark harness's checks, and the capture engine on CPU against a real
# libtorch; then the tests a plain `cargo test` leaves `#[ignore]`d because
# they need more than Rust and torch:
#   - the explorer in a real terminal (needs tmux; installed here when it
#     can be): run whenever tmux is there;
#   - parity with LibreYOLO 1.6 (needs the parity venv, capture/parity/
#     README.md): run with --parity, in CI, or when that venv already exists;
#     --parity and CI set it up first (about 550 MB, reusing the torch venv's
#     torch through a .pth file);
#   - the job questions as SQL (sql/) in DuckDB (needs its Python package;
#     installed here into the torch venv, about 20 MB): run whenever it
#     imports.
# In CI (CI=true) all of them run, a missing prerequisite fails its test,
# and a test still ignored for a missing prerequisite fails the run.
# At the end: how many tests ran, and which stayed ignored and why.
#
#   scripts/test.sh [--parity]
#
# env: CI; LIBREYOLO_PARITY_PYTHON (a python with libreyolo==1.6.0, used as
#      is), else the venv LIBREYOLO_PARITY_VENV (default
#      /tmp/libreyolo-bench-venv) is used and, when asked, created;
#      LIBREYOLO_DUCKDB_PYTHON (a python with duckdb, used as is), else the
#      torch venv's python, into which duckdb is installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { echo "test: $*" >&2; }

parity=0
for a in "$@"; do
  case $a in
    --parity) parity=1 ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) log "unknown argument $a (try --parity)"; exit 2 ;;
  esac
done
ci=0
case "${CI:-}" in "" | 0 | false | False | FALSE | no) ;; *) ci=1 parity=1 ;; esac

# The explorer's end-to-end test drives the real binary in tmux.
if ! command -v tmux >/dev/null 2>&1; then
  log "installing tmux"
  (apt-get update -qq && apt-get install -y -qq tmux) >/dev/null 2>&1 ||
    log "could not install tmux: the explorer's tmux tests stay ignored"
fi

eval "$(scripts/setup-torch.sh)"

# DuckDB for the SQL tests (app/tests/sql.rs finds it the same way): its
# wheel is self-contained, so the torch venv takes it without more.
duckdb_version=1.5.6
export LIBREYOLO_DUCKDB_PYTHON="${LIBREYOLO_DUCKDB_PYTHON:-$VIRTUAL_ENV/bin/python}"
has_duckdb() { "$LIBREYOLO_DUCKDB_PYTHON" -c "import duckdb" >/dev/null 2>&1; }
if ! has_duckdb; then
  if [[ "$LIBREYOLO_DUCKDB_PYTHON" == "$VIRTUAL_ENV/bin/python" ]]; then
    log "installing duckdb==$duckdb_version into $VIRTUAL_ENV"
    "$VIRTUAL_ENV/bin/python" -m pip install --disable-pip-version-check -q "duckdb==$duckdb_version" ||
      log "could not install duckdb: the SQL tests stay ignored"
  else
    log "LIBREYOLO_DUCKDB_PYTHON=$LIBREYOLO_DUCKDB_PYTHON cannot import duckdb; not touching it"
  fi
fi

# The LibreYOLO 1.6 parity venv: a venv of its own that sees the torch venv's
# torch through a .pth file, so pip does not download torch again.
parity_venv="${LIBREYOLO_PARITY_VENV:-/tmp/libreyolo-bench-venv}"
export LIBREYOLO_PARITY_PYTHON="${LIBREYOLO_PARITY_PYTHON:-$parity_venv/bin/python}"
has_libreyolo() { "$LIBREYOLO_PARITY_PYTHON" -W ignore -c "import libreyolo" >/dev/null 2>&1; }
setup_parity() {
  if has_libreyolo; then
    log "parity: libreyolo found at $LIBREYOLO_PARITY_PYTHON (reused)"
    return
  fi
  if [[ "$LIBREYOLO_PARITY_PYTHON" != "$parity_venv/bin/python" ]]; then
    log "parity: LIBREYOLO_PARITY_PYTHON=$LIBREYOLO_PARITY_PYTHON cannot import libreyolo; not touching it"
    return 1
  fi
  local torch_version purelib start
  torch_version="$(tr -d '[:space:]' < capture/TORCH_VERSION)"
  purelib='import sysconfig; print(sysconfig.get_paths()["purelib"])'
  start=$(date +%s)
  log "parity: creating $parity_venv (libreyolo==1.6.0 over the torch venv's torch $torch_version)"
  # (Called in an `||` list, where `set -e` does not apply: each step checks.)
  "$VIRTUAL_ENV/bin/python" -m venv "$parity_venv" || return 1
  "$VIRTUAL_ENV/bin/python" -c "$purelib" > "$("$parity_venv/bin/python" -c "$purelib")/torchvenv.pth" || return 1
  "$parity_venv/bin/python" -m pip install --disable-pip-version-check -q "libreyolo==1.6.0" "torch==$torch_version" || return 1
  has_libreyolo || return 1
  log "parity: set up in $(( $(date +%s) - start )) s"
}
if (( parity )); then
  setup_parity || log "parity: could not set up the LibreYOLO 1.6 venv; its tests will fail"
elif has_libreyolo; then
  parity=1
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
status=0
# run NAME cargo-test-args...: runs one cargo test pass, its output both shown
# and kept (for the counts).
run() {
  local name=$1
  shift
  log "cargo test $*"
  cargo test "$@" 2>&1 | tee "$out/$name.log" || status=1
}

# Everything, the capture engine's executable included, in one cargo
# invocation: both executables land in one target folder, as setup.sh's do.
# The later passes select the whole workspace too: with `-p` alone cargo
# resolves features for that package only and rebuilds libtorch's bindings.
# `libreyolo/parquet` as the README's build has it, so the Parquet tables
# are tested (src/tables.rs reads them back).
run main --workspace --features libreyolo/parquet --no-fail-fast
if command -v tmux >/dev/null 2>&1 || (( ci )); then
  run tmux --workspace --features libreyolo/parquet --test explore_tmux --no-fail-fast -- --ignored
fi
if has_duckdb || (( ci )); then
  run sql --workspace --features libreyolo/parquet --test sql --no-fail-fast -- --ignored
fi
if (( parity )); then
  run parity --workspace --features libreyolo/parquet --test parity --test loss_parity --no-fail-fast -- --ignored
fi

# The counts: libtest's "test result:" lines, summed. The later passes run
# only tests the first one ignored, so they move from ignored to ran.
count() { # file field(passed|failed|ignored)
  sed -n "s/^test result: .* \([0-9][0-9]*\) passed; \([0-9][0-9]*\) failed; \([0-9][0-9]*\) ignored;.*/\1 \2 \3/p" "$1" |
    awk -v f="$2" '{ s += (f == "passed" ? $1 : f == "failed" ? $2 : $3) } END { print s + 0 }'
}
passed=0 failed=0 ignored=0
for f in "$out"/*.log; do
  passed=$(( passed + $(count "$f" passed) ))
  failed=$(( failed + $(count "$f" failed) ))
done
ignored=$(count "$out/main.log" ignored)
ran_later=0
for f in "$out"/tmux.log "$out"/sql.log "$out"/parity.log; do
  if [[ -f "$f" ]]; then
    ran_later=$(( ran_later + $(count "$f" passed) + $(count "$f" failed) ))
  fi
done
ignored=$(( ignored - ran_later ))

# The tests still ignored, with their reasons.
sed -n 's/^test \(.*\) \.\.\. ignored\(, \(.*\)\)\{0,1\}$/\1\t\3/p' "$out/main.log" | sort -u > "$out/ignored.tsv"
cat "$out"/tmux.log "$out"/sql.log "$out"/parity.log 2>/dev/null | sed -n 's/^test \(.*\) \.\.\. \(ok\|FAILED\)$/\1/p' | sort -u > "$out/ran_later.txt"
still="$(awk -F'\t' 'FILENAME == ARGV[1] { later[$1] = 1; next } !($1 in later) { print }' "$out/ran_later.txt" "$out/ignored.tsv")"

echo
echo "tests: $(( passed + failed )) ran ($passed passed, $failed failed), $ignored ignored"
if [[ -n "$still" ]]; then
  echo "ignored:"
  awk -F'\t' '{ printf "  %s — %s\n", $1, ($2 == "" ? "no reason given" : $2) }' <<< "$still"
fi
if (( ci )) && grep -q $'\tneeds ' <<< "$still"; then
  echo "test: CI runs every test whose prerequisite can be set up, yet the ones above marked 'needs' did not run" >&2
  status=1
fi
if (( passed + failed == 0 )); then
  echo "test: no test ran" >&2
  status=1
fi
exit $status
