defmodule McpFramer.LongSchedules do
  @moduledoc false
  # Watches a process for schedules of 2 ms or more, for the scheduler
  # tests: `long_schedules/1` runs a function in a fresh process under
  # :erlang.system_monitor and returns that process's long_schedule events,
  # less what was not the process holding its scheduler: the garbage
  # collections within each (reported first as long_gc events, the cost of
  # the terms made) and the time the normal schedulers' threads waited for
  # a CPU meanwhile (on a busy machine the OS may take a core from a
  # scheduler's thread in the middle of any call).
  #
  # The VM sends monitor events from a thread of its own, in the order they
  # happened, but later than the process's own messages: on a busy machine
  # a long schedule's event came tens of ms after the worker said it was
  # done, and a watch that stopped there reported no stall. So the worker
  # gives its scheduler up once its work is done, which sends the event of
  # the schedule that ended it, and only then says so; the watch then
  # starts a sentinel that holds a scheduler itself, and stops when the
  # sentinel's event arrives, after every event of the worker.

  @limit_ms 2
  @sample_ms 2
  @tries 5
  @pause_ms 1000

  # The normal schedulers' threads, by name: "1_scheduler" up to OTP 26,
  # "erts_sched_1" from OTP 27 on. With neither found, nothing is taken
  # off for waits.
  @scheduler_thread ~r/^(\d+_scheduler|erts_sched_\d+)\n$/

  @spec long_schedules(function()) :: [keyword()]
  def long_schedules(fun) do
    load_modules()
    parent = self()
    me = make_ref()

    {worker, monitor} =
      spawn_monitor(fn ->
        receive do: (:go -> :ok)
        fun.()
        :erlang.yield()
        send(parent, {me, :done})
      end)

    # A garbage collection during a schedule is reported first, as a
    # long_gc event; its time is the cost of the terms made, not a stall.
    previous = :erlang.system_monitor(self(), [{:long_schedule, @limit_ms}, {:long_gc, 1}])
    send(worker, :go)
    watched = %{worker: worker, me: me, monitor: monitor, sentinel: nil}
    events = watch(watched, [sample()], [])
    restore(previous)
    stalls(Enum.reverse(events), 0, [])
  end

  # `long_schedules/1` of `fun` on what `setup` makes for it (outside the
  # watch), try after try until one sees no stall: [] then, else the last
  # try's stalls. A busy shared machine makes stalls that the next try, a
  # second later, does not: this one's hypervisor takes a core away now and
  # then, which no counter inside it shows (the steal in /proc/stat, in
  # 10 ms ticks, is too coarse to take off). A call that holds its
  # scheduler stalls on every try.
  # (A spec without a fun type of no arguments, which Elixir 1.14 and 1.18
  # format differently.)
  @spec stalls_on_every_try(function(), function()) :: [keyword()]
  def stalls_on_every_try(setup, fun) do
    Enum.reduce_while(1..@tries, [], fn try, _ ->
      if try > 1, do: Process.sleep(@pause_ms)
      # The input is a persistent term, which the worker reads without a
      # copy: copied onto its heap, it made collections of a second and
      # more on a dirty scheduler, whose time the watch took off the next
      # schedule, hiding a 10 ms stall.
      key = {__MODULE__, make_ref()}
      :persistent_term.put(key, setup.())

      try do
        case long_schedules(fn -> fun.(:persistent_term.get(key)) end) do
          [] -> {:halt, []}
          events -> {:cont, events}
        end
      after
        :persistent_term.erase(key)
      end
    end)
  end

  # Asserts, in the calling test, that `stalls_on_every_try/2` finds none
  # (a macro, so that this module calls nothing of ExUnit's, which
  # Dialyzer's PLT does not hold).
  defmacro assert_fair(setup, fun) do
    quote do
      events = McpFramer.LongSchedules.stalls_on_every_try(unquote(setup), unquote(fun))
      assert events == [], "long_schedule events on every try: #{inspect(events)}"
    end
  end

  # A module's first call loads it, and part of that work is done in the
  # calling process's own schedule: in the forky root, beside two busy
  # loops, a 3 ms schedule between two calls to the code server, which is
  # no NIF's. So every module the work may call is loaded first, once.
  defp load_modules do
    if :persistent_term.get({__MODULE__, :loaded}, false) == false do
      for app <- [:mcp_framer, :elixir, :stdlib, :kernel],
          module <- Application.spec(app, :modules) || [],
          do: Code.ensure_loaded(module)

      McpFramer.Hold.load!()

      :persistent_term.put({__MODULE__, :loaded}, true)
    end
  end

  defp restore(:undefined), do: :erlang.system_monitor(:undefined)
  defp restore({pid, options}), do: :erlang.system_monitor(pid, options)

  # The worker's events until it is done, each long schedule with the
  # samples of the schedulers' waits from before it began to when it was
  # reported. A sample is taken each time 2 ms pass with no event, so the
  # newest is from before any event not yet received: a watch that a busy
  # machine kept from running learns of a schedule late, and counting back
  # from now would place its start after it began and miss the wait.
  defp watch(%{worker: worker, me: me, monitor: monitor, sentinel: sentinel} = w, samples, events) do
    receive do
      {^me, :done} ->
        Process.demonitor(monitor, [:flush])
        {sentinel, _} = spawn_monitor(fn -> McpFramer.Hold.hold(@limit_ms + 1) end)
        watch(%{w | sentinel: sentinel}, samples, events)

      {:monitor, ^sentinel, :long_schedule, _info} ->
        receive do: ({:DOWN, _, :process, ^sentinel, _} -> events)

      {:DOWN, ^monitor, _, _, reason} ->
        raise "the watched process died: #{inspect(reason)}"

      # A sentinel that failed sends no event: fail, not wait. One that
      # ended normally may be gone before its event arrives.
      {:DOWN, _, :process, ^sentinel, reason} when reason != :normal ->
        raise "the watch's sentinel died: #{inspect(reason)}"

      {:monitor, ^worker, :long_gc, info} ->
        watch(w, samples, [{:gc, info[:timeout]} | events])

      {:monitor, ^worker, :long_schedule, info} ->
        # One sample period more, for an event sent just as that sample
        # was being taken.
        [{newest, _} | _] = samples
        began = newest - info[:timeout] - 1 - @sample_ms
        before = Enum.find(samples, List.last(samples), fn {at, _} -> at <= began end)
        event = {:schedule, info, os_wait_ms(before, sample())}
        watch(w, samples, [event | events])

      {:monitor, _other, _event, _info} ->
        watch(w, samples, events)
    after
      @sample_ms ->
        watch(w, [sample() | Enum.take(samples, 2000)], events)
    end
  end

  # The worker's long schedules, less the collections within each and the
  # time the normal schedulers' threads waited for a CPU meanwhile: on a
  # busy machine the OS may take a core away in the middle of any call,
  # which is not a call holding its scheduler.
  defp stalls([{:gc, ms} | events], gc_ms, stalls), do: stalls(events, gc_ms + ms, stalls)

  defp stalls([{:schedule, info, waited_ms} | events], gc_ms, stalls) do
    stalled = info[:timeout] - gc_ms - waited_ms >= @limit_ms
    info = info ++ [gc_ms: gc_ms, os_wait_ms: waited_ms]
    stalls(events, 0, if(stalled, do: [info | stalls], else: stalls))
  end

  defp stalls([], _gc_ms, stalls), do: stalls

  # {when, the time each normal scheduler's thread has waited runnable for
  # a CPU, in ms}, from Linux's schedstat; no waits where there is none.
  defp sample do
    waits =
      for tid <- scheduler_threads() do
        case File.read("/proc/#{System.pid()}/task/#{tid}/schedstat") do
          {:ok, stat} -> stat |> String.split() |> Enum.at(1) |> String.to_integer()
          {:error, _} -> 0
        end
      end

    {System.monotonic_time(:millisecond), waits}
  end

  # The most any normal scheduler's thread waited between two samples, in
  # ms to the microsecond: a schedule's time is given in whole ms, rounded
  # down, and a wait rounded down as well would leave up to a millisecond
  # of it standing as a stall.
  defp os_wait_ms({_, before}, {_, last}) do
    ns = Enum.zip_with(last, before, &(&1 - &2)) |> Enum.max(fn -> 0 end)
    div(ns, 1000) / 1000
  end

  defp scheduler_threads do
    case :persistent_term.get({__MODULE__, :threads}, nil) do
      nil ->
        tasks = Path.wildcard("/proc/#{System.pid()}/task/*")

        named =
          for task <- tasks,
              File.read!(Path.join(task, "comm")) =~ @scheduler_thread,
              do: task

        threads = Enum.map(named, &Path.basename/1)
        :persistent_term.put({__MODULE__, :threads}, threads)
        threads

      threads ->
        threads
    end
  end
end
