defmodule McpFramer.LongSchedulesTest do
  # The scheduler tests pass when their watch sees no stall, so the watch
  # must see one where there is one. :erlang.list_to_tuple/1 copies a list
  # in C without yielding: three million elements hold a scheduler for
  # tens of ms, more than a busy machine's waits and collections explain.
  use ExUnit.Case, async: false

  import McpFramer.LongSchedules, only: [long_schedules: 1]

  test "a call that holds its scheduler is reported" do
    list = Enum.to_list(1..3_000_000)

    assert [stall | _] = long_schedules(fn -> tuple_size(:erlang.list_to_tuple(list)) end)
    assert stall[:timeout] - stall[:gc_ms] - stall[:os_wait_ms] >= 2
  end
end
