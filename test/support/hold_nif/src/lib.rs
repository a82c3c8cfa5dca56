//! A NIF that holds its normal scheduler on purpose. The scheduler tests
//! pass when their watch (test/support/long_schedules.ex) sees no stall,
//! so test/long_schedules_test.exs shows it one: a call that runs for as
//! long as it is asked without giving its thread back. Only the tests
//! build and load it (`McpFramer.Hold`).

/// Spins until the calling thread has run for `millis` ms, and returns
/// how long it ran, in microseconds. The time is the thread's CPU time,
/// not the wall clock's: on a busy machine the OS may take the core away
/// meanwhile, which must not make the hold any shorter. Raises
/// `no_thread_clock` where there is no such clock to read.
#[rustler::nif]
fn hold(millis: u64) -> Result<u64, rustler::Error> {
    let no_clock = || rustler::Error::RaiseAtom("no_thread_clock");
    let start = thread_cpu_nanos().ok_or_else(no_clock)?;
    let wanted = millis.saturating_mul(1_000_000);
    loop {
        let ran = thread_cpu_nanos()
            .ok_or_else(no_clock)?
            .saturating_sub(start);
        if ran >= wanted {
            return Ok(ran / 1_000);
        }
        std::hint::spin_loop();
    }
}

fn thread_cpu_nanos() -> Option<u64> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a timespec the call may write.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    let seconds = u64::try_from(now.tv_sec).ok()?;
    let nanos = u64::try_from(now.tv_nsec).ok()?;
    (status == 0).then(|| seconds * 1_000_000_000 + nanos)
}

rustler::init!("Elixir.McpFramer.Hold");
