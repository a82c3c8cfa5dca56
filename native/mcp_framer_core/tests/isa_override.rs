//! `MCP_FRAMER_ISA` names the instruction set to use in place of the
//! widest, for tests and benchmarks of the narrower ones on one machine.
//! A test binary of its own: the choice is made once per process, at the
//! first use.

use mcp_framer_core::arch::Isa;

#[test]
fn mcp_framer_isa_picks_a_narrower_instruction_set_the_cpu_has() {
    let all = Isa::all();
    // The one below the widest: the override must be what changes the
    // choice. With only the twin, there is nothing to pick.
    let Some(&wanted) = all.iter().rev().nth(1) else {
        return;
    };
    // SAFETY: this binary's only test sets it, before any other thread
    // reads the environment.
    unsafe { std::env::set_var("MCP_FRAMER_ISA", wanted.name()) };
    assert_eq!(Isa::best(), wanted);
}
