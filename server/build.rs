fn main() {
    // New migration files must rebuild the crate that embeds them.
    println!("cargo:rerun-if-changed=../migrations/sqlite/chat");
    println!("cargo:rerun-if-changed=../migrations/postgres/chat");
}
