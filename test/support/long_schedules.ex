defmodule McpFramer.LongSchedules do
  @moduledoc false
  # Watches a process for schedules that hold a normal scheduler 2 ms or
  # more, for the scheduler tests. `long_schedules/1` runs a function in a
  # fresh process, traced: each time it is scheduled in and out, and each
  # of its garbage collections, with the time (in ns) and the scheduler. A
  # schedule is from an `in` on a normal scheduler to the next `out`;
  # what is taken off it is what was not the process holding its
  # scheduler: the garbage collections within it (the cost of the terms
  # made), and the time that scheduler's thread waited for a CPU meanwhile
  # (on a busy machine the OS may take a core from it in the middle of any
  # call), read from samples taken every 2 ms or more around the schedule,
  # so on a busy machine more may be taken off.
  # Schedules on dirty schedulers (id 0), collections the VM moves there
  # included, are not counted.
  #
  # Trace messages come from the process itself, in order, the last when it
  # has exited (`out_exited`): the watch ends there, with every event.
  #
  # It replaced a watch of :erlang.system_monitor's long_schedule events,
  # in whole ms and without their scheduler, which took off every long
  # collection reported before a schedule and the largest wait of any
  # scheduler thread: it passed a join that held a scheduler 16-32 ms
  # behind the collections of the calls before it.

  @limit_ms 2
  @sample_ms 2
  @tries 5
  @pause_ms 1000
  @exited_ms 10_000

  # The normal schedulers' threads by name, "1_scheduler" up to OTP 26,
  # "erts_sched_1" from OTP 27 on, and the number is the scheduler's id.
  # With neither found, nothing is taken off for waits.
  @scheduler_thread ~r/^(?:(\d+)_scheduler|erts_sched_(\d+))\n$/

  @trace [:running, :exiting, :garbage_collection, :monotonic_timestamp, :scheduler_id]

  @spec long_schedules(function()) :: [keyword()]
  def long_schedules(fun) do
    load_modules()

    # Linked, so that it dies with a test that times out; what it raises
    # is sent back and raised here, and it always ends normally.
    parent = self()
    failed = make_ref()

    worker =
      spawn_link(fn ->
        receive do: (:go -> :ok)

        try do
          fun.()
        catch
          kind, reason -> send(parent, {failed, kind, reason, __STACKTRACE__})
        end
      end)

    1 = :erlang.trace(worker, true, @trace)
    first = sample()
    send(worker, :go)
    {events, samples} = watch(worker, [], [first])

    receive do
      {^failed, kind, reason, stacktrace} -> :erlang.raise(kind, reason, stacktrace)
    after
      0 -> :ok
    end

    events |> Enum.reverse() |> schedules(nil, []) |> stalls(Enum.reverse(samples))
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
      # more, which are the copy's cost, not the work's.
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
      assert events == [], "long schedules on every try: #{inspect(events)}"
    end
  end

  # The reductions the calling process is charged while `fun` runs in it:
  # a NIF call's own, and what it reports to the scheduler as its time
  # (enif_consume_timeslice, 40 a percent of a slice of 4,000).
  @spec reductions_charged(function()) :: non_neg_integer()
  def reductions_charged(fun) do
    {:reductions, before} = Process.info(self(), :reductions)
    fun.()
    {:reductions, now} = Process.info(self(), :reductions)
    now - before
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

  # The worker's trace events, newest first, until it has exited; and
  # samples of the normal schedulers' threads' waits, newest first, one
  # each time @sample_ms pass, however fast the events come.
  defp watch(worker, events, [{_, last, _} | _] = samples, deadline \\ nil) do
    samples =
      if now() - last >= @sample_ms * 1_000_000,
        do: [sample() | samples],
        else: samples

    receive do
      {:trace_ts, ^worker, :out_exited, info, scheduler, at} ->
        {[{:out_exited, scheduler, at, info} | events], [sample() | samples]}

      {:trace_ts, ^worker, tag, info, scheduler, at} ->
        watch(worker, [{tag, scheduler, at, info} | events], samples, deadline)
    after
      @sample_ms -> watch(worker, events, samples, exit_deadline(worker, deadline))
    end
  end

  # Once the worker is found dead, the time by which its out_exited must
  # have come. A process is no longer alive from the moment it starts to
  # exit, its last event (out_exited) comes when it is scheduled out for
  # the last time, and trace messages reach the tracer some time after
  # their events: in the forky root (OTP 29) a watch that raised as soon
  # as it found the worker dead without out_exited failed one CI run. The
  # watch goes on, sampling as before, and raises only if out_exited has
  # not come @exited_ms after, rather than wait forever.
  defp exit_deadline(worker, nil) do
    if Process.alive?(worker), do: nil, else: now() + @exited_ms * 1_000_000
  end

  defp exit_deadline(_worker, deadline) do
    if now() > deadline,
      do: raise("the watched process exited #{@exited_ms} ms ago without its trace's out_exited")

    deadline
  end

  # The schedules on normal schedulers (ids from 1; a dirty scheduler's
  # is 0), oldest first, each with the time of the collections within it.
  defp schedules([{tag, id, at, mfa} | events], nil, done)
       when tag in [:in, :in_exiting] and id > 0,
       do: schedules(events, %{id: id, in: at, gc: 0, gc_from: nil, from: mfa}, done)

  defp schedules([{tag, id, at, _} | events], %{id: id, gc_from: nil} = open, done)
       when tag in [:gc_minor_start, :gc_major_start],
       do: schedules(events, %{open | gc_from: at}, done)

  defp schedules([{tag, id, at, _} | events], %{id: id, gc_from: from} = open, done)
       when tag in [:gc_minor_end, :gc_major_end] and from != nil,
       do: schedules(events, %{open | gc: open.gc + at - from, gc_from: nil}, done)

  defp schedules([{tag, _, at, mfa} | events], %{} = open, done)
       when tag in [:out, :out_exiting, :out_exited],
       do: schedules(events, nil, [Map.merge(open, %{out: at, to: mfa}) | done])

  defp schedules([_ | events], open, done), do: schedules(events, open, done)
  defp schedules([], _open, done), do: Enum.reverse(done)

  # The schedules that held their scheduler @limit_ms or more, less the
  # collections within and what its thread waited for a CPU meanwhile.
  defp stalls(schedules, samples) do
    limit = @limit_ms * 1_000_000

    for %{id: id, in: from, out: to, gc: gc} = schedule <- schedules,
        to - from - gc >= limit,
        waited = waited(samples, id, from, to),
        to - from - gc - waited >= limit do
      [
        timeout: ms(to - from),
        gc_ms: ms(gc),
        os_wait_ms: ms(waited),
        scheduler: id,
        in: schedule.from,
        out: schedule.to
      ]
    end
  end

  # What scheduler `id`'s thread waited between the last sample read all
  # before `from` and the first read all after `to`: its wait within the
  # schedule, and what it waited around it until those samples (2 ms or
  # more on each side, more when the watch itself was kept waiting). 0
  # where either sample could not read it.
  defp waited(samples, id, from, to) do
    {_, _, before} =
      samples |> Enum.take_while(fn {_, ended, _} -> ended <= from end) |> List.last(hd(samples))

    {_, _, last} = Enum.find(samples, List.last(samples), fn {began, _, _} -> began >= to end)

    case {before, last} do
      {%{^id => waited_before}, %{^id => waited_last}} -> max(waited_last - waited_before, 0)
      _ -> 0
    end
  end

  defp ms(ns), do: Float.round(ns / 1_000_000, 3)

  # Trace times are the VM's monotonic time in ns.
  defp now, do: System.monotonic_time(:nanosecond)

  # {when reading began, when it ended, %{scheduler id => ns its thread has
  # waited runnable for a CPU}}, from Linux's schedstat; none where there
  # is no such file.
  defp sample do
    began = now()

    waits =
      for {id, tid} <- scheduler_threads(),
          {:ok, stat} <- [File.read("/proc/#{System.pid()}/task/#{tid}/schedstat")],
          into: %{},
          do: {id, stat |> String.split() |> Enum.at(1) |> String.to_integer()}

    {began, now(), waits}
  end

  # [{scheduler id, thread id}] of the normal schedulers.
  defp scheduler_threads do
    case :persistent_term.get({__MODULE__, :threads}, nil) do
      nil ->
        threads =
          for task <- Path.wildcard("/proc/#{System.pid()}/task/*"),
              {:ok, name} <- [File.read(Path.join(task, "comm"))],
              [_ | ids] <- [Regex.run(@scheduler_thread, name)],
              do: {ids |> Enum.join() |> String.to_integer(), Path.basename(task)}

        :persistent_term.put({__MODULE__, :threads}, threads)
        threads

      threads ->
        threads
    end
  end
end
