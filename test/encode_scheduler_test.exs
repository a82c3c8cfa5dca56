defmodule McpFramer.EncodeSchedulerTest do
  # Encoding must give a normal scheduler's thread back quickly, as
  # decoding does: large terms of every shape encoded in a row in one
  # process, watched for schedules of 2 ms or more. A try that
  # sees one is repeated on terms made anew, so that a retry never runs on
  # memory the try before faulted in: a noisy shared machine gets a few
  # tries, a real stall shows on every one.
  use ExUnit.Case, async: false

  import McpFramer.LongSchedules, only: [assert_fair: 2, reductions_charged: 1]

  alias McpFramer.JSON
  alias McpFramer.JSON.Formatter

  @moduletag timeout: 600_000
  # Timing of the release build: left out of the checked run (Makefile).
  @moduletag :scheduling
  @mib 1024 * 1024

  # {name, term, options}, made anew for each try.
  defp jobs do
    text = fn size -> String.duplicate("line \"quoted\"\tand\\more\n", div(size, 24)) end

    [
      {"a 10 MiB tools/list result", tools_list(10 * @mib), []},
      {"a 100 MB blob", %{"data" => :binary.copy("QUJD", 25_000_000)}, []},
      {"8 MiB of text with escapes", %{"text" => text.(8 * @mib)}, []},
      {"4 MiB of CJK text, unicode_safe", String.duplicate("日本語", div(4 * @mib, 9)),
       [escape: :unicode_safe]},
      {"a million control bytes", :binary.copy(<<1>>, 1_000_000), []},
      {"a million integers", Enum.to_list(1..1_000_000), []},
      {"a million floats", Enum.map(1..1_000_000, &(&1 / 7)), []},
      {"a million atoms", List.duplicate(:some_atom, 1_000_000), []},
      {"a map of 200,000 pairs", Map.new(1..200_000, &{"key #{&1}", &1}), []},
      {"a map of 200,000 mixed keys, strict",
       Map.new(1..200_000, &if(rem(&1, 2) == 0, do: {&1, 1}, else: {"k#{&1}", 2})),
       [maps: :strict]},
      # A key is checked for a repeat by hashing a copy of it: a long one
      # only if the call can afford it.
      {"a map of a 1 MB key and an atom key, strict",
       %{:binary.copy("k", 1_000_000) => 1, :a => 2}, [maps: :strict]},
      {"a million nested lists", Enum.reduce(1..1_000_000, [], fn _, inner -> [inner] end), []},
      {"4,000 integers of 1,000 digits", List.duplicate(7 * 10 ** 999 + 1, 4000), []},
      {"a date in a large term", [tools_list(2 * @mib), ~D[2024-01-02]], []},
      # A struct is converted in Elixir first, and so is everything around
      # it, which must be preempted as any code is.
      {"two million integers after a date", [~D[2024-01-02] | Enum.to_list(1..2_000_000)], []},
      {"a map of 200,000 pairs and a date",
       Map.put(Map.new(1..200_000, &{"key #{&1}", &1}), "at", ~D[2024-01-02]), []},
      {"a map of 200,000 pairs and a float key",
       Map.put(Map.new(1..200_000, &{"key #{&1}", &1}), 1.5, 1), []},
      {"10,000 small messages",
       for(i <- 1..10_000, do: %{"jsonrpc" => "2.0", "id" => i, "result" => %{}}), []},
      # Laid out after the compact text: a long text; a short one that
      # becomes long, its lines indented up to 6,000 spaces; one too long
      # for memory, a mebibyte of indent a level, 16,000 levels deep; and
      # two just under what one call on a normal scheduler lays out (64
      # KiB of text, 256 KiB laid out).
      {"a 4 MiB tools/list result, pretty", tools_list(4 * @mib), [pretty: true]},
      {"3,000 nested lists, pretty", nested(3000), [pretty: true]},
      {"16,000 nested lists, a MiB of indent, pretty", nested(16_000),
       [pretty: [indent: :binary.copy(" ", @mib)]]},
      {"63 KB of tools/list, pretty", tools_list(70 * 1024), [pretty: true]},
      {"43 KB of tools/list laid out to 220 KB, pretty", tools_list(48 * 1024),
       [pretty: [indent: "        "]]},
      # Separators as long as the rest: a normal call must see that the
      # first line's margin is past what it may write before building it.
      {"a list with a 50 MB line separator, pretty", [1, 2],
       [pretty: [line_separator: :binary.copy("\n", 50 * @mib)]]},
      {"a number with a 50 MB line separator, pretty", 1,
       [pretty: [line_separator: :binary.copy("\n", 50 * @mib)]]},
      {"a nested list with a 50 MB indent, pretty", [[1]],
       [pretty: [indent: :binary.copy(" ", 50 * @mib)]]}
    ]
  end

  defp nested(depth), do: Enum.reduce(1..depth, [1], fn _, inner -> [inner, 2] end)

  defp tools_list(size) do
    tool = fn i ->
      %{
        "name" => "tool_#{i}",
        "description" => "Runs step #{i}: \"quoted\" and café",
        "inputSchema" => %{
          "type" => "object",
          "properties" => %{
            "path" => %{"type" => "string"},
            "count" => %{"type" => "integer", "minimum" => 0, "maximum" => i},
            "ratio" => %{"type" => "number", "default" => i / 3}
          },
          "required" => ["path"]
        }
      }
    end

    %{"jsonrpc" => "2.0", "id" => 1, "result" => %{"tools" => Enum.map(1..div(size, 300), tool)}}
  end

  defp run(jobs) do
    for {name, term, opts} <- jobs do
      # Results are measured, not kept: keeping them would measure the
      # test's own garbage collections.
      # A text too large for memory is an error, in its own time.
      case JSON.encode(term, opts) do
        {:ok, text} -> true = byte_size(text) > 0 or raise name
        {:error, %McpFramer.EncodeError{reason: :no_memory}} -> :ok
      end

      if not Keyword.has_key?(opts, :pretty) do
        true = IO.iodata_length(JSON.encode_line!(term, opts)) > 1 or raise name
      end
    end
  end

  test "large terms of every shape in a row, on fresh memory" do
    assert_fair(&jobs/0, &run/1)
  end

  # Iodata refers to each long string without escapes: a list of a part
  # of the text and a string for each, made in one go once the walk is
  # done, so only if the call can afford it.
  test "iodata of thousands of strings referred to, many in a row" do
    strings = fn count -> for i <- 1..count, do: :binary.copy(<<rem(i, 26) + ?a>>, 1024) end

    assert_fair(
      fn -> for count <- [1000, 3000, 5000], _ <- 1..4, do: strings.(count) end,
      fn terms ->
        for term <- terms, do: true = IO.iodata_length(JSON.encode_to_iodata!(term)) > 0
      end
    )
  end

  # A call reports its time as reductions, 40 a percent of a slice of
  # 4,000. A term this small is walked without reading the clock, its time
  # estimated at 3.5 ns a byte of its text (encode/walk.rs), a string
  # referenced from the term counted as written: a 3,998-byte string's
  # 4,000 bytes 14 us, 1.4% of a slice. So 20,000 of them report 1,120,000
  # reductions more than 20,000 integers 1: half of it will do, as in
  # scheduler_test, and one and a half times as much would count the text
  # twice.
  test "small terms report the time their text is estimated at, referenced strings included" do
    reductions = fn term ->
      reductions_charged(fn ->
        for _ <- 1..20_000, do: {:ok, _} = McpFramer.Native.encode(term, 0, nil)
      end)
    end

    more = reductions.(:binary.copy("x", 3_998)) - reductions.(1)
    assert more >= 560_000
    assert more <= 1_680_000
  end

  # A small term is encoded without reading the clock, its time then
  # estimated from the text written: the call reports it all the same, and
  # a process that encodes one after another is preempted by it. Control
  # bytes, written as \u00XX, are cheap to walk and slow to write: 2,600
  # make 15.6 KB of text.
  test "small slow terms one per call, many in a row, are preempted by the time they report" do
    assert_fair(
      fn -> for i <- 1..3000, do: :binary.copy(<<1>>, 2600) <> Integer.to_string(i) end,
      fn strings -> for string <- strings, do: {:ok, _} = JSON.encode(string) end
    )
  end

  # A text of 16 KiB or more is copied only once the call's clock says it
  # may be, so its clock starts after the walk: the call reports the walk's
  # estimated time as well as the copy's. 15,000 control bytes are 90 KB of
  # text, about 180 us a call here.
  test "terms walked untimed and then copied with the clock, many in a row, are preempted by both times" do
    assert_fair(
      fn -> for i <- 1..300, do: :binary.copy(<<1>>, 15_000) <> Integer.to_string(i) end,
      fn strings -> for string <- strings, do: {:ok, _} = JSON.encode(string) end
    )
  end

  # The digits of a bignum take time that grows with the square of its
  # size, in one go that cannot stop: one too large for a call's time is
  # written on a dirty scheduler from the start.
  test "integers of 100,000 digits are written on a dirty scheduler" do
    assert_fair(
      fn -> for i <- 1..3, do: 7 * 10 ** 99_999 + i end,
      fn integers -> for integer <- integers, do: {:ok, _} = JSON.encode(integer) end
    )
  end

  # JSON text given to McpFramer.JSON.Formatter, as iodata and binaries:
  # a large text, laid out and minimized; one with its whitespace; and
  # one just under what a normal scheduler's call takes (64 KiB).
  defp texts do
    compact = JSON.encode!(tools_list(4 * @mib))
    pretty = JSON.encode!(tools_list(2 * @mib), pretty: [indent: "\t\t"])
    under = JSON.encode!(tools_list(70 * 1024))
    [compact, pretty, [under, ?\n, under], under]
  end

  defp format(texts) do
    for text <- texts do
      true = byte_size(Formatter.pretty_print(text)) > 0
      true = byte_size(Formatter.minimize(text)) > 0
    end
  end

  # A layout grows with the square of the nesting: 2 KB of brackets laid
  # out with an indent of 1 KiB are a gigabyte, written on a dirty
  # scheduler, which nothing preempts. Once its caller is gone it stops,
  # freeing its binary long before a whole layout would be done. A try is
  # made again when the watch saw the layout start late (a busy machine),
  # or its binary freed late: one that kept on writing is late every time.
  test "a dirty layout stops soon after its caller dies" do
    deep = String.duplicate("[", 1000) <> String.duplicate("]", 1000)
    lay_out = fn -> Formatter.pretty_print(deep, indent: :binary.copy(" ", 1024)) end
    base = :erlang.memory(:binary)
    Process.flag(:priority, :high)

    whole =
      for _ <- 1..2 do
        {time, size} = :timer.tc(fn -> byte_size(lay_out.()) end)
        assert size > 1_000_000_000
        :erlang.garbage_collect()
        :ok = wait_until(fn -> :erlang.memory(:binary) < base + 500_000_000 end)
        time
      end
      |> Enum.min()

    tries =
      for _ <- 1..5, reduce: [] do
        [{:stopped, _} | _] = tries -> tries
        tries -> [kill_while_laying_out(lay_out, base, whole) | tries]
      end

    assert [{:stopped, _} | _] = tries,
           "whole layouts took #{div(whole, 1000)} ms; the tries, last first: #{inspect(tries)}"
  end

  # {:stopped, µs} if the binary was freed within half a whole layout's
  # time after the kill, which came in its first quarter; else why not.
  # Memory is measured from the least seen since the spawn: binaries of
  # earlier tests that a dirty scheduler made are freed only when that
  # scheduler next runs, as the layout starts, and were still counted in
  # `base` (the test then saw the whole layout done before the watch
  # noticed it, 2026-12-05).
  defp kill_while_laying_out(lay_out, base, whole) do
    spawned = System.monotonic_time(:microsecond)
    caller = spawn(lay_out)
    {:ok, low} = watch_layout(caller, base, System.monotonic_time(:millisecond) + 10_000)
    seen = System.monotonic_time(:microsecond) - spawned
    alive = Process.alive?(caller)
    Process.exit(caller, :kill)
    freed = fn -> :erlang.memory(:binary) < low + 500_000_000 end
    {stopped, :ok} = :timer.tc(fn -> wait_until(freed, 60_000) end)

    cond do
      not alive -> {:done_before_the_kill, seen}
      seen > whole / 4 -> {:seen_late, seen}
      stopped >= whole / 2 -> {:freed_late, stopped}
      true -> {:stopped, stopped}
    end
  end

  # {:ok, least binary memory seen} once the layout's binary shows (800 MB
  # over the least) or its caller is gone, looking as wait_until/2 does.
  defp watch_layout(caller, low, deadline) do
    memory = :erlang.memory(:binary)
    low = min(low, memory)

    cond do
      memory > low + 800_000_000 or not Process.alive?(caller) ->
        {:ok, low}

      System.monotonic_time(:millisecond) > deadline ->
        {:timeout, low}

      true ->
        :erlang.yield()
        watch_layout(caller, low, deadline)
    end
  end

  # :ok once `done?` holds, or :timeout after `ms`. It looks without
  # sleeping, so that its scheduler's thread stays awake: on a busy
  # machine one that sleeps can be woken 130 ms late.
  defp wait_until(done?, ms \\ 10_000) do
    deadline = System.monotonic_time(:millisecond) + ms
    wait_until_deadline(done?, deadline)
  end

  defp wait_until_deadline(done?, deadline) do
    cond do
      done?.() ->
        :ok

      System.monotonic_time(:millisecond) > deadline ->
        :timeout

      true ->
        :erlang.yield()
        wait_until_deadline(done?, deadline)
    end
  end

  test "JSON text laid out and minimized in a row, on fresh memory" do
    assert_fair(&texts/0, &format/1)
  end

  # A text short enough to lay out on a normal scheduler is laid out
  # without reading the clock, its time estimated from the bytes read and
  # written: the call reports it, and a process that lays out one text
  # after another is preempted by it. Small objects are the slowest text
  # to lay out a byte: 2,000 of them make 41 KB.
  test "short texts laid out one per call, many in a row, are preempted by the time they report" do
    text = JSON.encode!(for i <- 1..2000, do: %{"a" => i, "b" => [1, 2]})

    assert_fair(
      fn -> for i <- 1..300, do: text <> String.duplicate(" ", rem(i, 3)) end,
      fn texts -> for text <- texts, do: true = byte_size(Formatter.pretty_print(text)) > 0 end
    )
  end
end
