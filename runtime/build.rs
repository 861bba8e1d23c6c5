fn main() {
    // New migration files must rebuild the binary that embeds them.
    println!("cargo:rerun-if-changed=../migrations");
}
