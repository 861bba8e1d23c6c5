fn main() {
    // New migration files must rebuild the crate that embeds them.
    println!("cargo:rerun-if-changed=../migrations/sqlite/content");
    println!("cargo:rerun-if-changed=../migrations/postgres/content");
}
