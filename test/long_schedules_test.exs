defmodule McpFramer.LongSchedulesTest do
  # The scheduler tests pass when their watch sees no stall, so the watch
  # must see one where there is one. McpFramer.Hold holds its scheduler
  # for as many ms of its thread's CPU time as it is asked: 50 is far more
  # than a busy machine's waits take off (the waits are read from samples
  # 2 ms apart or more, around the schedule, and a hold of 4 ms went
  # unreported in 4 runs of 5 beside two busy loops). The work ends
  # with the hold, so the schedule ends as the worker exits: a watch that
  # stopped before its last event would miss it.
  use ExUnit.Case, async: false

  import McpFramer.LongSchedules, only: [long_schedules: 1, stalls_on_every_try: 2]

  # The scheduler tests' watch, tagged as they are.
  @moduletag :scheduling

  alias McpFramer.Hold

  test "a call that holds its scheduler is reported as a stall" do
    stalls = long_schedules(fn -> Hold.hold(50) end)
    assert Enum.any?(stalls, &(&1[:timeout] >= 50)), "stalls: #{inspect(stalls)}"
  end

  # The OS may take a core away at any moment on a busy machine: one try
  # must see nothing, as in the scheduler tests.
  test "a call that gives its scheduler back in time is not" do
    stalls = stalls_on_every_try(fn -> 0 end, &Hold.hold/1)
    assert stalls == [], "stalls on every try: #{inspect(stalls)}"
  end
end
