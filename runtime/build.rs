fn main() {
    // New migration files must rebuild the crate that embeds them.
    println!("cargo:rerun-if-changed=../migrations/sqlite/runtime");
    println!("cargo:rerun-if-changed=../migrations/postgres/runtime");
}
