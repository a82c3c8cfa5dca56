//! `MCP_FRAMER_ISA` names the instruction set to use in place of the
//! widest, for tests and benchmarks of the narrower ones on one machine
//! (`make rust-tests`, `make bench`). The choice is made once per process,
//! at the first use, so this binary runs its first test again in a process
//! of its own for each name.

use mcp_framer_core::arch::Isa;

/// What the process was started with: the instruction set the variable
/// names if the CPU has it, else the widest, at the first call and every
/// call after it.
#[test]
fn the_instruction_set_chosen_at_the_first_use_is_kept() {
    let all = Isa::all();
    let named = std::env::var("MCP_FRAMER_ISA").ok();
    let wanted = all
        .iter()
        .find(|isa| named.as_deref() == Some(isa.name()))
        .or(all.last())
        .copied();
    for _ in 0..3 {
        assert_eq!(Some(Isa::best()), wanted, "MCP_FRAMER_ISA={named:?}");
    }
}

/// Every instruction set the CPU has, and one it has not, which leaves
/// the widest. On x86-64 alone: elsewhere the portable twin is the only
/// one, and the tests run under qemu (`make cross`), which cannot start
/// another program for that CPU unless the kernel is set up for it.
#[cfg(target_arch = "x86_64")]
#[test]
fn mcp_framer_isa_picks_any_instruction_set_the_cpu_has_and_ignores_others() {
    let this = std::env::current_exe().unwrap();
    let names = Isa::all().into_iter().map(Isa::name).chain(["neon"]);
    for name in names {
        let run = std::process::Command::new(&this)
            .args([
                "--exact",
                "the_instruction_set_chosen_at_the_first_use_is_kept",
            ])
            .env("MCP_FRAMER_ISA", name)
            .output()
            .unwrap();
        let output = String::from_utf8_lossy(&run.stdout);
        assert!(run.status.success(), "{name}: {output}");
        assert!(output.contains("1 passed"), "{name}: {output}");
    }
}
