defmodule McpFramer.LongSchedulesTest do
  # The scheduler tests pass when their watch sees no stall, so the watch
  # must see one where there is one. McpFramer.Hold holds its scheduler
  # for as many ms of its thread's CPU time as it is asked: 50 is far more
  # than a busy machine's waits and collections take off. The work ends
  # with the hold, so its event comes from the VM's own thread after the
  # worker is done: a watch that stops when the worker says so misses it.
  use ExUnit.Case, async: false

  import McpFramer.LongSchedules, only: [long_schedules: 1]

  alias McpFramer.Hold

  test "a call that holds its scheduler is reported as a stall" do
    assert [stall] = long_schedules(fn -> Hold.hold(50) end)
    assert stall[:timeout] - stall[:gc_ms] - stall[:os_wait_ms] >= 2
  end

  test "a call that gives its scheduler back in time is not" do
    assert [] = long_schedules(fn -> Hold.hold(0) end)
  end
end
