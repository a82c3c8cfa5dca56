//! An `MCP_FRAMER_ISA` that names no instruction set this CPU has leaves
//! the widest. A test binary of its own, as `isa_override.rs`.

use mcp_framer_core::arch::Isa;

#[test]
fn mcp_framer_isa_naming_no_instruction_set_the_cpu_has_is_ignored() {
    // SAFETY: this binary's only test sets it, before any other thread
    // reads the environment.
    unsafe { std::env::set_var("MCP_FRAMER_ISA", "neon") };
    assert_eq!(Isa::best(), *Isa::all().last().unwrap());
}
