defmodule McpFramer.LongSchedules do
  @moduledoc false
  # Watches a process for schedules of 2 ms or more, as
  # test/scheduler_test.exs does for the framer: `long_schedules/1` runs a
  # function in a fresh process under :erlang.system_monitor and returns
  # that process's long_schedule events, less the garbage collections
  # within each (reported first as long_gc events: the cost of the terms
  # made, not a stall).

  @limit_ms 2

  @spec long_schedules(function()) :: [keyword()]
  def long_schedules(fun) do
    parent = self()
    me = make_ref()

    {worker, monitor} =
      spawn_monitor(fn ->
        receive do: (:go -> :ok)
        fun.()
        send(parent, {me, :done})
      end)

    previous = :erlang.system_monitor(self(), [{:long_schedule, @limit_ms}, {:long_gc, 1}])
    send(worker, :go)

    receive do
      {^me, :done} ->
        Process.demonitor(monitor, [:flush])

      {:DOWN, ^monitor, _, _, reason} ->
        restore(previous)
        raise "the watched process died: #{inspect(reason)}"
    after
      300_000 ->
        restore(previous)
        raise "the watched process did not finish"
    end

    restore(previous)
    collect(worker, 0, [])
  end

  defp restore(:undefined), do: :erlang.system_monitor(:undefined)
  defp restore({pid, options}), do: :erlang.system_monitor(pid, options)

  defp collect(worker, gc_ms, events) do
    receive do
      {:monitor, ^worker, :long_gc, info} ->
        collect(worker, gc_ms + info[:timeout], events)

      {:monitor, ^worker, :long_schedule, info} ->
        stalled = info[:timeout] - gc_ms >= @limit_ms
        collect(worker, 0, if(stalled, do: [info ++ [gc_ms: gc_ms] | events], else: events))

      {:monitor, _other, _event, _info} ->
        collect(worker, gc_ms, events)
    after
      0 -> events
    end
  end
end
