defmodule McpFramer.SchedulerTest do
  # A NIF on a normal scheduler must give its thread back quickly. Each case
  # watches the feeding process for schedules of 2 ms or more, less what
  # garbage collection and the OS took of them (McpFramer.LongSchedules):
  # on a busy machine the OS may take a core from a scheduler's thread at
  # any moment. A noisy machine gets a few retries, each on memory no try
  # before it faulted in.
  use ExUnit.Case, async: false

  import McpFramer.LongSchedules, only: [assert_fair: 2, reductions_charged: 1]

  alias McpFramer.Chunks

  @moduletag timeout: 300_000
  # Timing of the release build: left out of the checked run (Makefile).
  @moduletag :scheduling

  @mib 1024 * 1024

  defp assert_fair(fun), do: assert_fair(fn -> nil end, fn nil -> fun.() end)

  defp feed_all(framer, chunks) do
    Enum.reduce(chunks, framer, fn chunk, framer -> elem(McpFramer.feed(framer, chunk), 2) end)
  end

  test "64 KiB of {} (21,845 messages) in one feed" do
    chunk = :binary.copy("{}\n", 21_845)
    assert_fair(fn -> McpFramer.feed(McpFramer.new(), chunk) end)
  end

  # A chunk of up to 4 MiB (timeslice.rs's NORMAL_CHUNK_MAX; this one is
  # a byte under) is framed on a normal scheduler, in calls that each take
  # at most a few thousand messages; their lists are joined at the end,
  # and the join must be preempted as the calls are.
  test "a 4 MiB chunk of {} (1,398,101 messages) in one feed, joined from many calls" do
    chunk = :binary.copy("{}\n", div(4 * @mib, 3))
    assert_fair(fn -> {:ok, [_ | _], _} = McpFramer.feed(McpFramer.new(), chunk) end)
  end

  test "one 256 MiB chunk" do
    chunk = :binary.copy(:binary.copy("x", 1023) <> "\n", 256 * 1024)
    assert_fair(fn -> McpFramer.feed(McpFramer.new(), chunk) end)
  end

  test "a 64 MiB chunk of 200 B messages" do
    chunk = :binary.copy(:binary.copy("y", 199) <> "\n", div(64 * @mib, 200))
    assert_fair(fn -> McpFramer.feed(McpFramer.new(), chunk) end)
  end

  test "an 8 MiB message completing after 128 chunks" do
    piece = :binary.copy("z", 65_536)
    last = binary_part(piece, 0, 65_535) <> "\n"
    chunks = List.duplicate(piece, 127) ++ [last]

    assert_fair(fn ->
      {:ok, [message], _} =
        McpFramer.new(max_message_bytes: 8 * @mib)
        |> feed_all(Enum.drop(chunks, -1))
        |> McpFramer.feed(last)

      true = byte_size(message) == 8 * @mib - 1
    end)
  end

  # Every first copy into a new message binary page-faults, and a retry on
  # memory a try before faulted in would hide a stall. So each try makes
  # its chunks anew, and the messages of every try are kept to the end of
  # the test: their pages are not freed, and the next try's copies land on
  # pages none has touched. (A try is retried when the machine took its
  # core: once, with no retry, this case failed in the forky root.)
  test "several 8 MiB messages in a row in one process, on fresh memory" do
    keeper = self()

    runs = fn ->
      for run <- 1..4 do
        pieces = for i <- 1..127, do: :binary.copy(<<?a + rem(run * 127 + i, 26)>>, 65_536)
        pieces ++ [:binary.copy("z", 65_535) <> "\n"]
      end
    end

    assert_fair(runs, fn runs ->
      Enum.reduce(runs, McpFramer.new(max_message_bytes: 8 * @mib), fn chunks, framer ->
        {messages, framer} = feed_collect(framer, chunks)
        [message] = messages
        true = byte_size(message) == 8 * @mib - 1
        send(keeper, {:kept, message})
        framer
      end)
    end)
  end

  test "a 4 MiB chunk that completes a message of 20 MiB held, on fresh memory" do
    assert_fair(
      fn ->
        held = for i <- 1..20, do: :binary.copy(<<?a + i>>, @mib)
        {held, :binary.copy("t", 4 * @mib - 1) <> "\n"}
      end,
      fn {held, last} ->
        framer = feed_all(McpFramer.new(max_message_bytes: 32 * @mib), held)
        {:ok, [message], _} = McpFramer.feed(framer, last)
        true = byte_size(message) == 24 * @mib - 1
      end
    )
  end

  # A copy's time on fresh memory varies too much to watch for, so what a
  # call may copy into a message made from held bytes is bounded by size
  # (timeslice.rs's COPY_SLICE, 256 KiB), the completing chunk's tail
  # included, and the calls are counted: a message of n bytes takes at
  # least n / 256 KiB of them. The held bytes are referenced chunks, or
  # short pieces gathered into one buffer.
  test "a call copies at most 256 KiB into a message made from held bytes, its tail included" do
    kib = 1024
    tail = :binary.copy("t", 255 * kib) <> "\n"

    for {held, shape} <- [
          {for(i <- 1..4, do: :binary.copy(<<?a + i>>, 64 * kib)), "256 KiB in 4 chunks"},
          {for(i <- 1..5, do: :binary.copy(<<?a + i>>, 60 * kib)), "300 KiB in 5 chunks"},
          {for(i <- 1..63, do: :binary.copy(<<?a + rem(i, 26)>>, 1000)), "63 KB gathered"}
        ] do
      framer = feed_all(McpFramer.new(), held)
      {{:ok, [message], _}, calls} = count_feed_calls(fn -> McpFramer.feed(framer, tail) end)

      assert message == IO.iodata_to_binary([held, binary_part(tail, 0, 255 * kib)]), shape
      least = div(byte_size(message) + 256 * kib - 1, 256 * kib)
      assert calls >= least, "#{shape}: #{calls} calls, at least #{least} expected"
    end
  end

  # A call reports its time as reductions, 40 a percent of a slice of
  # 4,000 (enif_consume_timeslice). An untimed call's time is estimated:
  # 0.5 ns a byte of its chunk among the rest (timeslice.rs), far under a
  # percent for each chunk here, so 20,000 chunks 2,000 bytes longer
  # report 20 ms more, 80,000 reductions, only if what each call falls
  # short of a percent is carried to the next. Half of it will do: other
  # processes on the same scheduler thread take part of the carry.
  test "small chunks report the time their size is estimated at, a call's fraction of a percent carried to the next" do
    longer = :binary.copy("x", 2001) <> "\n"
    more = feed_reductions(longer, 20_000) - feed_reductions("x\n", 20_000)
    assert more >= 40_000
  end

  # An untimed call is also estimated at 40 ns a message it takes
  # (timeslice.rs), and looks at the clock only at its 512th: a chunk of
  # 500 messages of `{}` costs 20 us, 80 reductions, more than one of a
  # single message of as many bytes. So 10,000 such calls report 800,000
  # reductions more: half of it will do, and twice as much would be an
  # estimate gone wrong.
  test "small chunks report the time their messages are estimated at" do
    # The process is charged for collecting the lists of messages too,
    # about as much again on a default heap: one of 32 MB (4,000,000
    # words) collects them rarely.
    Process.flag(:min_heap_size, 4_000_000)
    :erlang.garbage_collect()

    many = :binary.copy("{}\n", 500)
    one = :binary.copy("x", byte_size(many) - 1) <> "\n"
    more = feed_reductions(many, 10_000) - feed_reductions(one, 10_000)
    assert more >= 400_000
    assert more <= 1_600_000
  end

  # A document of 4 KiB or less is decoded without reading the clock, its
  # time estimated at 150 ns and 5 ns a byte (timeslice.rs): 20 us for
  # 4,000 bytes, 2% of a slice, 80 reductions. So 20,000 documents 3,999
  # bytes longer report 1,600,000 reductions more (a string this short
  # asks for no more fuel, so its clock never starts): half of it will
  # do, as above, and twice as much would be an estimate gone wrong.
  test "small documents report the time their size is estimated at" do
    options = decode_options()

    reductions = fn document ->
      reductions_charged(fn ->
        for _ <- 1..20_000, do: {:ok, _} = McpFramer.Native.decode(document, options)
      end)
    end

    long = ~s(") <> :binary.copy("x", 3_998) <> ~s(")
    more = reductions.(long) - reductions.("1")
    assert more >= 800_000
    assert more <= 3_200_000
  end

  # It gives up the rest of its slice, whatever its time: after a yield,
  # all 4,000 reductions of a fresh one. Searching 256 KiB takes far less.
  test "a call that stops short of its chunk reports a whole slice, so that its process is descheduled" do
    resource = McpFramer.new().resource
    chunk = :binary.copy("t", 300 * 1024) <> "\n"
    :erlang.yield()

    charged =
      reductions_charged(fn ->
        assert {:continue, :ok, [], 262_144} = McpFramer.Native.feed(resource, 0, chunk)
      end)

    assert charged >= 3_000
  end

  # The reductions charged for feeding `chunk` to a fresh framer `calls`
  # times. Enum.each, not for: a list of every reply would be collected,
  # and charged for, too.
  defp feed_reductions(chunk, calls) do
    resource = McpFramer.new().resource

    reductions_charged(fn ->
      Enum.each(0..(calls - 1), &McpFramer.Native.feed(resource, &1, chunk))
    end)
  end

  # The default decoding options, as McpFramer.JSON hands them to the NIF.
  defp decode_options, do: McpFramer.JSON.options!([], "McpFramer.SchedulerTest")

  # What `fun` returns, and how many times the NIF's feed was called
  # meanwhile (this module's tests run alone: it is not async).
  defp count_feed_calls(fun) do
    mfa = {McpFramer.Native, :feed, 3}
    1 = :erlang.trace_pattern(mfa, true, [:call_count])

    try do
      result = fun.()
      {:call_count, calls} = :erlang.trace_info(mfa, :call_count)
      true = is_integer(calls)
      {result, calls}
    after
      :erlang.trace_pattern(mfa, false, [:call_count])
    end
  end

  defp feed_collect(framer, chunks) do
    Enum.flat_map_reduce(chunks, framer, fn chunk, framer ->
      {:ok, messages, framer} = McpFramer.feed(framer, chunk)
      {messages, framer}
    end)
  end

  describe "decode: :json" do
    # Decoding a schema-heavy message takes about 5 ms a MiB: each call
    # decodes within a time budget, and what does not fit goes to a dirty
    # scheduler. Several jobs run in a row in one process. A try that sees
    # a stall is repeated on chunks made anew, so a retry never runs on
    # memory that the try before faulted in. A schedule may hold a few
    # calls before the reported time preempts the process, so the 2 ms
    # watch checks calls of well under 1 ms each.
    test "large messages of every shape in a row, on fresh memory" do
      assert_fair(&decode_jobs/0, &run_decode_jobs/1)
    end

    # A small document may be decoded without reading the clock, its time
    # then estimated from its size, or measured from when its parse asks
    # for more time: either way the call reports it, and a process that
    # decodes one after another is preempted by it. Four 1000-digit
    # integers make few terms, whose collections would preempt it too, and
    # cost as much as 4 KiB of any JSON.
    test "small slow documents one per call, many in a row, are preempted by the time they report" do
      assert_fair(fn -> small_slow_documents("") end, fn documents ->
        for document <- documents, do: {:ok, _} = McpFramer.JSON.decode(document)
      end)
    end

    test "small slow messages one per chunk, many in a row, are preempted by the time they report" do
      assert_fair(fn -> small_slow_documents("\n") end, fn chunks ->
        true = count_items(McpFramer.new(decode: :json), chunks) == length(chunks)
      end)
    end

    # A string's error, its end missing or a bad byte after it, is
    # reported at the first byte that is not UTF-8 before it, if any, as
    # Jason does: found after the string has been parsed, in time that the
    # parse's pace does not see. Escapes parse fastest, and the strings are
    # as long as a normal scheduler parses whole. Whether it does depends
    # on the memory its buffers get, so each goes to the normal
    # scheduler's NIF several times in a row, as a server would send it
    # again, without the dirty call that follows a refusal.
    test "errors at the end of long strings of escapes" do
      assert_fair(&escape_errors/0, &decode_each_on_normal(&1, :error))
    end

    # An object's map is made in one call that cannot stop, which hashes or
    # compares its keys' bytes, and once more, a pair at a time, when a key
    # repeats: long keys, cheap to parse, make it cost milliseconds.
    test "objects of long keys, one repeated, made into maps" do
      assert_fair(&long_key_objects/0, &decode_each_on_normal(&1, :ok))
    end

    # Small documents' time is estimated from their size, the clock read
    # only now and then, so a call also stops at 2,048 messages
    # (timeslice.rs): each is several terms, and their list one more. On
    # a busy machine one may be left for a dirty scheduler.
    test "a call decodes at most 2,048 messages, however small" do
      resource = McpFramer.new(decode: :json).resource

      {:continue, :ok, items, _consumed} =
        case McpFramer.Native.feed(resource, 0, :binary.copy("{}\n", 10_000)) do
          {:decode_dirty, reply} -> reply
          reply -> reply
        end

      assert length(items) <= 2048
    end

    # A list is made in one call that cannot stop, taken to cost 100 ns a
    # term (timeslice.rs): 10,000 terms, 1 ms, are past a call's hard
    # limit of 700 us, however fast the document was parsed.
    test "a list whose making would go past a call's time is left for a dirty scheduler" do
      options = McpFramer.JSON.options!([], "McpFramer.SchedulerTest")
      document = "[" <> String.duplicate("0,", 9_999) <> "0]"
      assert McpFramer.Native.decode(document, options) == :continue_dirty
      assert McpFramer.JSON.decode(document) == {:ok, List.duplicate(0, 10_000)}
    end

    # Text of 25 KB with an escape every 64 bytes parses in a few
    # microseconds (tens with debug assertions), though its fuel runs out
    # and is asked for again (timeslice.rs); 100 KB of it (64 KiB or more)
    # has its pace watched too. Far inside a call's time, each is decoded
    # on a normal scheduler. On a busy machine a try that loses its thread
    # for a while is left for a dirty one: one of a hundred will do.
    test "documents parsed well inside a call's time are decoded on a normal scheduler" do
      options = decode_options()
      line = String.duplicate("a", 62) <> "\\n"

      for length <- [25_000, 100_000] do
        document = ~s([") <> String.duplicate(line, div(length, 64)) <> ~s("])
        decoded? = fn _ -> match?({:ok, _}, McpFramer.Native.decode(document, options)) end
        assert Enum.any?(1..100, decoded?), "#{byte_size(document)} bytes, dirty 100 times"
      end
    end
  end

  # Each document eight times in a row by the normal scheduler's NIF,
  # whose reply is `tag`'s or :continue_dirty, with no dirty call after.
  defp decode_each_on_normal(documents, tag) do
    options = McpFramer.JSON.options!([], "McpFramer.SchedulerTest")

    for document <- documents, _again <- 1..8 do
      reply = McpFramer.Native.decode(document, options)
      true = reply == :continue_dirty or elem(reply, 0) == tag
    end
  end

  defp long_key_objects do
    for {pairs, size} <- [{512, 2000}, {256, 4000}, {32, 32_600}] do
      prefix = :binary.copy("k", size)
      keys = for i <- (pairs - 2)..0//-1, do: prefix <> String.pad_leading("#{i}", 4, "0")
      # A match, not hd/1: Elixir 1.19's types say a `for` may give [].
      [first | _] = keys
      pairs = Enum.map_join(keys ++ [first], ",", &~s("#{&1}":1))
      "{" <> pairs <> "}"
    end
  end

  defp escape_errors do
    for escapes <- [150_000, 250_000, 300_000],
        ending <- ["", <<0xFF, ?">>],
        do: ~s(") <> :binary.copy("\\n", escapes) <> ending
  end

  # Each a binary of its own, under 4 KiB.
  defp small_slow_documents(ending) do
    for i <- 1..3000 do
      integers = for j <- 1..4, do: [Integer.to_string(i * 4 + j), :binary.copy("7", 995)]
      IO.iodata_to_binary(["[", Enum.intersperse(integers, ","), "]", ending])
    end
  end

  defp decode_jobs do
    [
      {"a 10 MiB tools/list result", Chunks.port(tools_list(10 * @mib) <> "\n")},
      {"a 100 MB blob", Chunks.port(blob(100_000_000) <> "\n")},
      {"a million open brackets", Chunks.port(:binary.copy("[", 1_000_000) <> "\n")},
      {"64 KiB chunks of {}", for(_ <- 1..64, do: :binary.copy("{}\n", 21_845))},
      {"1000-digit integers", Chunks.port(big_integers(4 * @mib) <> "\n")},
      {"a 4 MiB chunk of small messages", [small_messages(4 * @mib)]},
      # Just under the size decoded on a normal scheduler, and slow to
      # decode: each must give up in time and go to a dirty scheduler.
      {"a string of 500,000 escapes",
       Chunks.port(~s(") <> :binary.copy("\\n", 500_000) <> ~s("\n))},
      {"a string of \\u escapes",
       Chunks.port(~s(") <> :binary.copy("\\u00e9", 170_000) <> ~s("\n))},
      {"a float of a million digits", Chunks.port("0." <> :binary.copy("7", 1_000_000) <> "\n")},
      {"a million spaces", Chunks.port(:binary.copy(" ", 1_000_000) <> "1\n")},
      {"a 1000 KB tools/list result", Chunks.port(tools_list(1_000_000) <> "\n")},
      {"an object of 50,000 pairs", Chunks.port(big_object(50_000) <> "\n")},
      # Integers over 1,024 characters are errors, found by one scan: just
      # under the normal scheduler's size, and far over it.
      {"a line of a million digits", Chunks.port("[" <> :binary.copy("7", 1_000_000) <> "]\n")},
      {"an 8 MiB line of digits", Chunks.port("[" <> :binary.copy("7", 8 * @mib - 2) <> "]\n")},
      {"a 4 MiB tools/list document", {:document, tools_list(4 * @mib), [], :ok}},
      # Just under the size a normal scheduler tries, with copied strings:
      # the error holds a copy of the whole document.
      {"a million spaces and a bad byte, strings copied",
       {:document, :binary.copy(" ", 1_000_000) <> "x", [strings: :copy], :error}},
      {"a line of a million digits, strings copied",
       {:document, "[" <> :binary.copy("7", 1_000_000) <> "]", [strings: :copy], :error}},
      # The decoding options' own work: a key of a mebibyte to make an
      # atom of or to check for repeats, and an object of many keys hashed.
      {"a 1 MB key, keys: :atoms", {:framed, Chunks.port(long_key(1_000_000)), [keys: :atoms]}},
      {"a 1 MB key, keys: :atoms!", {:framed, Chunks.port(long_key(1_000_000)), [keys: :atoms!]}},
      {"a 1 MB key, duplicate_keys: :error",
       {:framed, Chunks.port(long_key(1_000_000)), [duplicate_keys: :error]}},
      {"a 1 MB key, keys: :atoms! and duplicate_keys: :error",
       {:framed, Chunks.port(long_key(1_000_000)), [keys: :atoms!, duplicate_keys: :error]}},
      {"an object of 50,000 pairs, duplicate_keys: :error",
       {:framed, Chunks.port(big_object(50_000) <> "\n"), [duplicate_keys: :error]}},
      # A key function's error lists the keys of every pair completed
      # before it, in a list made in one call that cannot stop.
      {"just under a mebibyte of pairs, cut short, with a key function",
       {:document, "{" <> :binary.copy(~s("a":1,), 174_700), [keys: &String.upcase/1], :error}},
      # A key function's pairs and items are made into maps and lists in
      # Elixir, which must be preempted as any code is.
      {"400,000 objects in an array, with a key function",
       {:document, "[" <> :binary.copy(~s({"a":1},), 400_000) <> "1]", [keys: &String.upcase/1],
        :ok}},
      {"an object of 250,000 pairs, with a key function",
       {:document, big_object(250_000), [keys: &String.upcase/1], :ok}},
      # Strings copied into binaries of their own, as long as a normal
      # scheduler parses whole: a copy into memory not yet touched can
      # take milliseconds, and a copy that stops must not be taken whole.
      {"a string of a mebibyte, strings copied",
       {:document, ~s(") <> :binary.copy("x", 1_040_000) <> ~s("), [strings: :copy],
        {:ok, :binary.copy("x", 1_040_000)}}},
      {"a mebibyte string with escapes, strings copied",
       {:framed, Chunks.port(~s(") <> :binary.copy("xxxxxxxxxxxxxx\\n", 65_000) <> ~s("\n)),
        [strings: :copy]}},
      # The error of a thrown position holds a copy of the document.
      {"a 32 MiB document, a key function that throws, strings copied",
       {:document, ~s({"a":") <> :binary.copy("x", 32 * @mib) <> ~s("}),
        [keys: fn _ -> throw({:position, 0}) end, strings: :copy], :error}},
      {"a 4 MiB tools/list document, every limit set",
       {:document, tools_list(4 * @mib),
        [max_depth: 64, max_values: 10_000_000, duplicate_keys: :error, keys: :atoms], :ok}}
    ]
  end

  defp long_key(size), do: ~s({") <> :binary.copy("k", size) <> ~s(":1}\n)

  defp run_decode_jobs(jobs) do
    for {name, job} <- jobs do
      case job do
        {:document, document, opts, {:ok, term}} ->
          {:ok, ^term} = McpFramer.JSON.decode(document, opts)

        {:document, document, opts, tag} ->
          {^tag, _} = McpFramer.JSON.decode(document, opts)

        {:framed, chunks, opts} ->
          framer = McpFramer.new([decode: :json, max_message_bytes: 128 * @mib] ++ opts)
          true = count_items(framer, chunks) > 0 or raise "#{name}: no items"

        chunks ->
          framer = McpFramer.new(decode: :json, max_message_bytes: 128 * @mib)
          true = count_items(framer, chunks) > 0 or raise "#{name}: no items"
      end
    end
  end

  # Items are counted, not kept: a test that kept a million maps would
  # measure its own garbage collections.
  defp count_items(framer, chunks) do
    {_, count} =
      Enum.reduce(chunks, {framer, 0}, fn chunk, {framer, count} ->
        {:ok, items, framer} = McpFramer.feed(framer, chunk)
        {framer, count + length(items)}
      end)

    count
  end

  # Chunks of 64 KiB, each a binary of its own, as a Port delivers them.
  defp tools_list(size) do
    tool = fn i ->
      ~s({"name":"tool_#{i}","description":"Runs step #{i}: \\"quoted\\" and caf\\u00e9",) <>
        ~s("inputSchema":{"type":"object","properties":{"path":{"type":"string"},) <>
        ~s("count":{"type":"integer","minimum":0,"maximum":#{i}},) <>
        ~s("tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]}}},) <>
        ~s("required":["path"]}})
    end

    tools = Stream.map(1..div(size, 300), tool) |> Enum.intersperse(",")
    IO.iodata_to_binary([~s({"jsonrpc":"2.0","id":1,"result":{"tools":[), tools, "]}}"])
  end

  defp big_object(pairs) do
    IO.iodata_to_binary([
      "{",
      Enum.map_intersperse(1..pairs, ",", &~s("k#{rem(&1, 49_999)}":#{&1})),
      "}"
    ])
  end

  defp blob(size) do
    IO.iodata_to_binary([~s({"data":"), :binary.copy("QUJD", div(size, 4)), ~s("})])
  end

  defp big_integers(size) do
    number = :binary.copy("7", 1000)
    numbers = List.duplicate(number, div(size, 1001))
    IO.iodata_to_binary(["[", Enum.intersperse(numbers, ","), "]"])
  end

  defp small_messages(size) do
    message = fn i ->
      ~s({"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":#{i}}}\n)
    end

    IO.iodata_to_binary(Stream.map(1..div(size, 80), message) |> Enum.to_list())
  end

  test "a 256 MiB oversize line in one chunk" do
    chunk = :binary.copy("o", 256 * @mib) <> "\n"

    assert_fair(fn ->
      {:error, :message_too_large, [], _} = McpFramer.feed(McpFramer.new(), chunk)
    end)
  end
end
