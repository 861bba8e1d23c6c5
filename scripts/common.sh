# Shared steps of scripts/run and scripts/test: install what is missing, then build.
# Each install step checks first, so running it again costs only the checks.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

WASM_BINDGEN_VERSION="0.2.130"   # must equal the `wasm-bindgen = "=…"` pin in Cargo.toml
export PATH="$ROOT/.tools/bin:$ROOT/end2end/node_modules/.bin:$PATH"

step() { printf '\n==> %s  [%dm%02ds]\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)); }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

ensure_wasm_target() {
  if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    step "adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
}

ensure_wasm_bindgen() {
  if [ "$("$ROOT/.tools/bin/wasm-bindgen" --version 2>/dev/null)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]; then
    step "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION into .tools (about 1 minute)"
    # Without --locked: its lockfile names a webpki-roots release the registry here lacks.
    # --debug: built in 77 s instead of 130 s on two cores, and it then binds our WASM in 3 s
    # instead of 0.7 s; the output is the same.
    cargo install --debug --root "$ROOT/.tools" wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
  fi
}

CARGO_FUZZ_VERSION="0.13.2"

ensure_cargo_fuzz() {
  if [ "$("$ROOT/.tools/bin/cargo-fuzz" --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
    step "installing cargo-fuzz $CARGO_FUZZ_VERSION into .tools (about 1 minute)"
    # --debug: it only drives cargo, so a shorter build costs nothing when it runs.
    cargo install --debug --root "$ROOT/.tools" cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --force
  fi
}

# fuzz_cargo build|run [ARGS…]: cargo-fuzz on the question_schema target with the one set of flags
# both the build and the run take (a difference would build it again).
# The fuzz crate is a workspace of its own, built with cargo-fuzz's flags; scripts/test's clippy
# wrapper (lint_in_builds) is for the main workspace.
# 16 codegen units (cargo-fuzz's default is 1): a shorter build from scratch on two cores, for
# somewhat fewer executions per second.
fuzz_cargo() {
  local subcommand="$1"
  shift
  env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS cargo fuzz "$subcommand" \
    --fuzz-dir "$ROOT/fuzz" \
    --sanitizer none \
    --codegen-units 16 \
    question_schema "$@"
}

CARGO_AUDIT_VERSION="0.22.2"

# Into cargo's own bin folder, not the checkout: a fresh clone (as CI makes) does not build it again.
ensure_cargo_audit() {
  # It names itself "cargo-audit-audit 0.22.2".
  if [[ "$(cargo audit --version 2>/dev/null)" != *" $CARGO_AUDIT_VERSION" ]]; then
    step "installing cargo-audit $CARGO_AUDIT_VERSION where cargo installs tools (about 4 minutes, once)"
    cargo install cargo-audit --version "$CARGO_AUDIT_VERSION" --locked --no-default-features
  fi
}

ensure_chromium() {
  if ! command -v chromium >/dev/null 2>&1; then
    step "installing Debian's chromium"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
  fi
}

ensure_npm_packages() {
  if [ ! -x "$ROOT/end2end/node_modules/.bin/playwright" ] \
     || [ "$ROOT/end2end/package-lock.json" -nt "$ROOT/end2end/node_modules/.package-lock.json" ]; then
    step "installing the end-to-end test packages (npm ci)"
    (cd "$ROOT/end2end" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
  fi
}

# The steps cargo-leptos would take, without it: server, WASM frontend, bindings, CSS and assets.
build_site() {
  step "building the server"
  cargo build -p server
  build_frontend
}

# Clippy's lints ride on the builds: `cargo clippy` is cargo with clippy-driver wrapping rustc for
# the workspace's own crates, so building with that wrapper lints and compiles them in one pass,
# where a separate `cargo clippy` would compile every dependency a second time in check mode
# (minutes on two cores from scratch). Dependencies are built by plain rustc either way. The
# wrapper is part of each crate's fingerprint: every cargo command of a run needs the same setting
# (scripts/test sets it once, before its first build).
lint_in_builds() {
  RUSTC_WORKSPACE_WRAPPER="$(rustup which clippy-driver)"
  export RUSTC_WORKSPACE_WRAPPER
  export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
}

# Every debug build the tests use, in one invocation with one package selection and one feature
# set: the server binaries, the bench binary and every test target then share each dependency's
# build (separate invocations resolve features differently and build the server crate up to three
# times, each a 600 MB rlib: minutes on two cores and gigabytes of disk).
TEST_PACKAGES=(-p question -p attachments -p db -p runtime -p content -p demo -p mcp -p server -p bench -p app --features app/ssr)
build_for_tests() {
  step "building the server, the bench binary and the tests (one feature set)"
  cargo build "${TEST_PACKAGES[@]}" --bins --tests --examples
}

# build_frontend [-p PACKAGE…]: other WASM packages built in the same invocation share its
# dependencies' builds (scripts/test lints the bench's WASM reference so).
build_frontend() {
  step "building the WASM frontend"
  cargo build -p frontend "$@" --lib --target wasm32-unknown-unknown
  step "generating the JS bindings"
  local stage="$ROOT/target/site-stage"
  rm -rf "$stage" && mkdir -p "$stage"
  wasm-bindgen --target web --no-typescript --out-dir "$stage" --out-name tourguide \
    target/wasm32-unknown-unknown/debug/frontend.wasm
  # A debug bundle is large and rebuilt often: a quick brotli setting is enough for it.
  pack_site "$stage" "$ROOT/target/site" 5
}

# pack_site STAGE SITE BROTLI_QUALITY: puts the wasm-bindgen output in STAGE and the stylesheet
# into SITE/pkg under names that carry a hash of their content (tourguide.<hash>.js, .wasm, .css),
# writes the hashes to SITE/hash.txt (the format Leptos' HydrationScripts reads; the server serves
# hashed names as immutable), precompresses each file with brotli and gzip for the server to pick
# by Accept-Encoding, and copies public/ into SITE.
pack_site() {
  local stage="$1" site="$2" quality="$3" kind source hash
  mkdir -p "$site/pkg"
  rm -f "$site/pkg"/tourguide.* "$site/pkg"/tourguide_bg.* "$site/hash.txt"
  local hashes=""
  for kind in js wasm css; do
    case "$kind" in
      js) source="$stage/tourguide.js" ;;
      wasm) source="$stage/tourguide_bg.wasm" ;;
      css) source="$ROOT/style/main.css" ;;
    esac
    hash="$(sha256sum "$source" | cut -c1-16)"
    cp "$source" "$site/pkg/tourguide.$hash.$kind"
    hashes+="$kind: $hash"$'\n'
  done
  # wasm-bindgen puts JS that crates bring along in snippets/, imported relative to the script.
  if [ -d "$stage/snippets" ]; then rm -rf "$site/pkg/snippets"; cp -r "$stage/snippets" "$site/pkg/"; fi
  if command -v node >/dev/null 2>&1; then
    # Node's zlib has brotli; it is here for the browser tests anyway.
    node -e '
      const zlib = require("zlib"), fs = require("fs");
      const quality = Number(process.argv[1]);
      for (const file of process.argv.slice(2)) {
        const bytes = fs.readFileSync(file);
        fs.writeFileSync(file + ".br", zlib.brotliCompressSync(bytes, { params: {
          [zlib.constants.BROTLI_PARAM_QUALITY]: quality,
          [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.length } }));
        fs.writeFileSync(file + ".gz", zlib.gzipSync(bytes, { level: 9 }));
      }' "$quality" "$site/pkg"/tourguide.*.{js,wasm,css}
  else
    echo "node not found: the bundle is not precompressed (the server compresses it per request)"
  fi
  cp -r "$ROOT/public/." "$site/"
  # Written last: a server that reads it finds every file it names.
  printf '%s' "$hashes" > "$site/hash.txt"
}

# build_release_site SITE: the release server (target/release/server, built together with the
# bench binary so that scripts/bench and scripts/dist share one build of every dependency) and
# the optimised site in SITE: WASM built with the wasm-release profile, shrunk by wasm-opt, packed
# with brotli at its best setting.
build_release_site() {
  local site="$1" stage="$ROOT/target/release-stage"
  ensure_wasm_target
  ensure_wasm_bindgen
  ensure_wasm_opt
  step "building the release server"
  cargo build --release -p server -p bench
  step "building the release WASM frontend"
  cargo build -p frontend --lib --target wasm32-unknown-unknown --profile wasm-release
  rm -rf "$stage" && mkdir -p "$stage"
  wasm-bindgen --target web --no-typescript --out-dir "$stage" --out-name tourguide \
    target/wasm32-unknown-unknown/wasm-release/frontend.wasm
  step "optimising the WASM with wasm-opt -Oz"
  optimise_wasm "$stage/tourguide_bg.wasm"
  rm -rf "$site"
  pack_site "$stage" "$site" 11
}

# optimise_wasm FILE: wasm-opt -Oz in place, with the features rustc's wasm32 target emits; the
# passes again until they gain nothing (--converge: 0.7 KiB brotli of Tourguide's bundle).
optimise_wasm() {
  wasm-opt -Oz --converge --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue -o "$1" "$1"
}

# build_wasm_reference DIR: the bench's WASM limit reference (bench/wasm-reference), built and
# optimised as build_release_site builds the frontend, as DIR/reference_bg.wasm.
build_wasm_reference() {
  local dir="$1"
  step "building the WASM limit reference"
  cargo build -p wasm-reference --lib --target wasm32-unknown-unknown --profile wasm-release
  rm -rf "$dir" && mkdir -p "$dir"
  wasm-bindgen --target web --no-typescript --out-dir "$dir" --out-name reference \
    target/wasm32-unknown-unknown/wasm-release/wasm_reference.wasm
  optimise_wasm "$dir/reference_bg.wasm"
}

BINARYEN_VERSION="132.0.0"
# wasm-opt for release builds; Debian's binaryen is too old for today's WASM features.
ensure_wasm_opt() {
  if [ ! -x "$ROOT/.tools/npm/node_modules/.bin/wasm-opt" ]; then
    step "installing binaryen $BINARYEN_VERSION (wasm-opt) into .tools/npm"
    npm install --prefix "$ROOT/.tools/npm" --no-audit --no-fund "binaryen@$BINARYEN_VERSION"
  fi
  export PATH="$ROOT/.tools/npm/node_modules/.bin:$PATH"
}

# A throw-away PostgreSQL cluster for the tests, in target/postgres, on a local port. It keeps
# running after the tests (the next run reuses it); `scripts/postgres stop` ends it. Durability is
# switched off: nothing in it outlives the tests.
PG_PORT="${TOURGUIDE_PG_PORT:-55432}"
PG_DIR="$ROOT/target/postgres"

postgres_bin() {
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

# Runs a PostgreSQL program as the user that owns the cluster: it refuses to run as root.
as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

ensure_postgres() {
  export TOURGUIDE_TEST_POSTGRES="postgres://postgres@127.0.0.1:$PG_PORT/postgres"
  # Each test creates a database (CREATE DATABASE writes the template to the WAL): a small
  # max_wal_size recycles the WAL early, so a run does not leave a gigabyte of it on the disk.
  start_postgres_cluster "$PG_DIR" "$PG_PORT" \
    "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_wal_size=96MB -c min_wal_size=32MB"
}

# start_postgres_cluster DIR PORT SETTINGS: creates the cluster in DIR unless it exists, and starts
# it on 127.0.0.1:PORT unless something answers there. Installs Debian's postgresql if missing.
start_postgres_cluster() {
  local dir="$1" port="$2" settings="$3" bin
  bin="$(postgres_bin)"
  if [ -z "$bin" ]; then
    step "installing Debian's postgresql"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql
    bin="$(postgres_bin)"
  fi
  if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
    return
  fi
  mkdir -p "$dir"
  if [ "$(id -u)" -eq 0 ]; then chown postgres "$dir"; fi
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    step "creating a throw-away PostgreSQL cluster in ${dir#"$ROOT"/}"
    as_postgres "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-sync >/dev/null
  fi
  step "starting PostgreSQL on 127.0.0.1:$port"
  as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -s start \
    -o "-p $port -c listen_addresses=127.0.0.1 -k $dir -c max_connections=500 $settings"
}

# Drops the databases earlier test runs left on the cluster (one per test, named tg_…), in one
# session: 100 of them in 0.6 s here, where a psql session for each took 23 s.
drop_scratch_databases() {
  local bin
  bin="$(postgres_bin)"
  "$bin/psql" -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -Atc \
    "SELECT format('DROP DATABASE %I WITH (FORCE);', datname) FROM pg_database WHERE datname LIKE 'tg\_%'" |
    "$bin/psql" -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 >/dev/null
}

stop_postgres() {
  local bin
  bin="$(postgres_bin)"
  if [ -n "$bin" ] && [ -f "$PG_DIR/data/postmaster.pid" ]; then
    as_postgres "$bin/pg_ctl" -D "$PG_DIR/data" -w -s stop -m fast
  fi
}
