defmodule McpFramer.MemoryTest do
  # Memory is read from :erlang.memory(:binary), which counts NIF resources
  # and the held buffers as well as ordinary binaries. Not async, so no other
  # test allocates binaries meanwhile.
  use ExUnit.Case, async: false

  alias McpFramer.Chunks

  import McpFramer.Frames
  import McpFramer.Memory, only: [kept_alive: 1]

  @kib 1024
  @mib 1024 * 1024
  @chunk :binary.copy("x", 64 * @kib)

  test "held memory never exceeds the cap plus one chunk" do
    # The VM's binary memory counts every process's binaries: another
    # process that makes some meanwhile (a module loaded, a log line) can
    # add to a try's peak, so a try over the bound is tried again; one
    # within it decides.
    results = Enum.map(1..3, fn _ -> held_peak(4 * @mib) end)
    cap = 4 * @mib

    assert Enum.any?(results, fn {peak, left} ->
             peak <= cap + byte_size(@chunk) and left < 64 * @kib
           end),
           "on every try, held more than #{cap} + one chunk, or kept over 64 KiB " <>
             "once the line was dropped: #{inspect(results)}"

    for {peak, _left} <- results do
      assert peak > div(cap, 2), "the held bytes were not counted: peak #{peak}"
    end
  end

  # Grows a partial message to cap - 1 bytes, one chunk at a time, each a
  # new binary as a Port's are; returns the most binary memory it held
  # beyond what the VM held before, and what it still held once the line
  # went over the cap and the chunks were garbage.
  defp held_peak(cap) do
    framer = McpFramer.new(max_message_bytes: cap)
    before = settled_binary_memory()

    {framer, peak} =
      Enum.reduce(1..div(cap, byte_size(@chunk)), {framer, 0}, fn n, {framer, peak} ->
        size = if n == div(cap, byte_size(@chunk)), do: 65_535, else: 65_536
        {:ok, [], framer} = McpFramer.feed(framer, :binary.copy("x", size))
        {framer, max(peak, binary_memory() - before)}
      end)

    assert McpFramer.buffered_bytes(framer) == cap - 1

    # The line goes over the cap: its bytes are let go at once.
    {:error, :message_too_large, [], framer} = McpFramer.feed(framer, "yy")
    assert McpFramer.buffered_bytes(framer) == 0
    :erlang.garbage_collect()
    {peak, binary_memory() - before}
  end

  describe "what a kept message keeps alive" do
    # Message sizes chosen so that boundaries fall anywhere in the chunks.
    @sizes [300, 1_500, 20_000, 70_000, 100_003, 333_333, 1_234_567, 90, 5_000]

    for chunking <- [16, 4_096, 8_192, 65_536, :random] do
      test "a message that spans #{chunking}-byte chunks keeps at most its size + 4 KiB" do
        sizes = if unquote(chunking) == 16, do: Enum.filter(@sizes, &(&1 < 200_000)), else: @sizes
        {stream, spans} = numbered_stream(sizes)
        chunks = port_chunks(stream, unquote(chunking))
        messages = frame(McpFramer.new(), chunks)

        assert length(messages) == length(sizes)

        for {message, {from, to}} <- Enum.zip(messages, spans),
            crosses?(chunks, from, to) do
          kept = kept_alive(message)

          assert kept <= byte_size(message) + 4_096,
                 "a #{byte_size(message)}-byte message keeps #{kept} bytes alive"
        end
      end
    end

    # The keys of MCP's messages and of the JSON Schemas in tools/list
    # results, all in each of two objects.
    @keys ~w(jsonrpc id method params result error code message data tools name
      title description inputSchema outputSchema annotations readOnlyHint
      destructiveHint idempotentHint openWorldHint content type text isError
      progressToken progress total level logger properties required
      additionalProperties items enum default format pattern minimum maximum
      minLength maxLength minItems maxItems anyOf oneOf const exclusiveMinimum
      $schema)

    test "the keys a document repeats are, nearly all, one term each" do
      object = Enum.map_join(@keys, ",", &~s("#{&1}":1))
      {:ok, [first, second]} = McpFramer.JSON.decode("[{#{object}},{#{object}}]")
      again = Map.new(Map.keys(second), &{&1, &1})
      shared = Enum.count(Map.keys(first), &:erts_debug.same(&1, again[&1]))
      assert shared >= length(@keys) * 5 / 6, "#{shared} of #{length(@keys)} shared"
    end

    # The key table keeps keys of up to 22 bytes, each compared in
    # overlapping words of a size set by its length.
    test "a repeated key of any length the table keeps is one term" do
      for length <- 1..22 do
        key = binary_part("kQ7_-zEx9Lm$pA2wR#tY%c", 0, length)
        {:ok, [first, second]} = McpFramer.JSON.decode(~s([{"#{key}":1},{"#{key}":2}]))
        [{kept, 1}] = Map.to_list(first)
        [{again, 2}] = Map.to_list(second)
        assert kept == key
        assert :erts_debug.same(kept, again), "a #{length}-byte key made twice"
      end
    end

    # Keys of one length that start and end alike share a slot of the key
    # table, and the second goes in the slot beside it: a pair of such keys
    # at every length the table keeps, so that the shared slot is odd for
    # some and even for others.
    test "two keys that differ only inside are both kept, each one term" do
      for length <- 3..22 do
        [one, other] =
          for middle <- ["x", "y"] do
            "a" <> String.duplicate(middle, length - 2) <> "z"
          end

        document = ~s([{"#{one}":1,"#{other}":2},{"#{one}":3,"#{other}":4}])
        {:ok, [first, second]} = McpFramer.JSON.decode(document)
        assert Map.keys(first) == Map.keys(second)

        for key <- [one, other] do
          [kept] = Enum.filter(Map.keys(first), &(&1 == key))
          [again] = Enum.filter(Map.keys(second), &(&1 == key))
          assert :erts_debug.same(kept, again), "#{key} made twice"
        end
      end
    end

    test "a message inside one chunk is a sub-binary of that chunk" do
      message = :binary.copy("m", 1_000)
      chunk = :binary.copy("a\n" <> message <> "\nrest")
      assert {:ok, ["a", ^message], _} = McpFramer.feed(McpFramer.new(), chunk)
      {:ok, [_, inside], _} = McpFramer.feed(McpFramer.new(), chunk)
      assert kept_alive(inside) == byte_size(chunk)
    end

    # From OTP 27 on the VM copies a NIF's sub-binary of 64 bytes or
    # fewer into a binary of its own; the framer makes that copy itself
    # there, as it costs less, and a sub-binary before. (Before OTP 27 the
    # garbage collector gives a sub-binary of 24 bytes or fewer a binary of
    # its own, whenever it runs: the messages here are longer.)
    test "a message of 64 bytes or fewer keeps its chunk alive only where the VM's short sub-binaries do" do
      vm_copies? = String.to_integer(System.otp_release()) >= 27
      assert McpFramer.Native.copies_short_messages() == vm_copies?

      lines = Enum.map([40, 64, 65], &String.duplicate("s", &1))
      chunk = :binary.copy(String.duplicate("m", 100) <> "\n" <> Enum.join(lines, "\n") <> "\n")
      {:ok, [_ | messages], _} = McpFramer.feed(McpFramer.new(), chunk)
      assert messages == lines

      for message <- messages do
        own? = vm_copies? and byte_size(message) <= 64
        expected = if own?, do: byte_size(message), else: byte_size(chunk)
        assert kept_alive(message) == expected, "a #{byte_size(message)}-byte message"
      end
    end
  end

  describe "what a framer holds" do
    # {chunk size, partial size}: whole chunks, cuts inside a chunk, tiny
    # chunks that are gathered, and one chunk holding the whole partial.
    # Then the gather buffer's worst case: six full ones of 64 KiB are
    # binaries of their own, and 4,097 bytes make the last grow to 8 KiB,
    # 4,095 bytes of it unused. Last, the most binaries: chunks of 1 KiB,
    # each kept.
    @holdings [
      {4_096, 100_000},
      {1_000, 70_001},
      {16, 20_000},
      {65_536, 100_000},
      {65_536, 30_000},
      {100, 6 * 65_536 + 4_097},
      {1_024, 400 * 1_024}
    ]

    test "the VM accounts for at most each framer's held bytes + one chunk + 4 KiB, its state and headers" do
      for {chunk_size, partial} <- @holdings do
        count = 200

        used =
          held_memory(count, fn ->
            stream = "{\"done\":1}\n" <> :binary.copy("p", partial)
            frame_partial(McpFramer.new(), port_chunks(stream, chunk_size))
          end)

        allowed = count * allowed_per_framer(partial, chunk_size)

        assert used > count * partial, "#{used} bytes for #{count} partials of #{partial} bytes?"

        assert used <= allowed,
               "#{count} framers holding #{partial} bytes in #{chunk_size}-byte chunks " <>
                 "use #{used} bytes, over #{allowed}"
      end
    end

    # Each message ends in a gather buffer of 20 KiB, after two frozen
    # ones: once it is made, nothing of it is held.
    test "a framer that framed messages gathered from short chunks holds none of their bytes" do
      count = 200
      message = :binary.copy("g", 2 * 65_536 + 18_928) <> "\n"

      used =
        held_memory(count, fn ->
          frame_partial(McpFramer.new(), port_chunks(:binary.copy(message, 5), 1_000))
        end)

      allowed = count * allowed_per_framer(0, 0)

      assert used <= allowed,
             "#{count} framers with nothing held keep #{used} bytes, over #{allowed}"
    end

    test "2,000 framers holding 100 KB in 4 KB chunks use at most 1.2x the baseline's binary memory" do
      stream = :binary.copy("q", 100_000)

      [nif, baseline] =
        for module <- [McpFramer, McpFramer.PureFramer] do
          held_memory(2_000, fn -> frame_partial(module.new(), port_chunks(stream, 4_000)) end)
        end

      assert baseline > 2_000 * 100_000
      assert nif <= 1.2 * baseline, "McpFramer #{nif} bytes, the baseline #{baseline}"
    end
  end

  test "discarding a 1 GiB line fed in 64 KiB chunks holds constant memory" do
    framer = McpFramer.new()
    chunks = div(1024 * @mib, byte_size(@chunk))
    before = settled_binary_memory()

    # Past the 8 MiB cap the framer discards; sample memory from then on.
    {framer, peak} =
      Enum.reduce(1..chunks, {framer, 0}, fn n, {framer, peak} ->
        framer = feed_any(framer, @chunk)

        peak =
          if n > 129 and rem(n, 256) == 0, do: max(peak, binary_memory() - before), else: peak

        {framer, peak}
      end)

    assert peak < 256 * @kib, "held #{peak} bytes while discarding"
    assert McpFramer.buffered_bytes(framer) == 0
    assert {:ok, ["next"], _} = McpFramer.feed(framer, "\nnext\n")
  end

  test "200,000 framers' memory is freed when they are garbage collected" do
    before = settled_binary_memory()

    parent = self()

    {pid, ref} =
      spawn_monitor(fn ->
        framers =
          for _ <- 1..200_000 do
            {:ok, [], framer} = McpFramer.feed(McpFramer.new(), "{\"partial\":")
            framer
          end

        send(parent, :built)
        receive do: (:exit -> length(framers))
      end)

    # Each framer is a resource, plus a buffer for its partial message.
    assert_receive :built, 60_000
    used = binary_memory() - before
    assert used > 200_000 * 256, "200,000 framers use only #{used} bytes?"

    send(pid, :exit)
    assert_receive {:DOWN, ^ref, :process, ^pid, :normal}, 60_000

    left = wait_until(fn -> binary_memory() - before end, &(&1 < div(used, 100)))
    assert left < div(used, 100), "#{left} of #{used} bytes still allocated"
  end

  describe "the NIF's own memory" do
    # The NIF allocates its buffers with enif_alloc, which the VM counts
    # under :system. Native memory is what :system holds beyond binaries,
    # code, ETS and atoms: the NIF's buffers, and the VM's own.

    test "memory the NIF allocates is counted by the VM, while a call runs too" do
      # 32 MiB of strings with escapes: the encoder writes their 48 MiB of
      # JSON text into a buffer of its own before making the binary. A
      # watcher polls the VM's figure meanwhile; the OS may keep it from
      # running for the whole call on a busy machine, so a try that sees
      # too little is tried again.
      string = :binary.copy("a\n", 512)
      term = List.duplicate(string, 32_768)
      text_bytes = byte_size(McpFramer.JSON.encode!(term))

      grown =
        Enum.reduce_while(1..3, 0, fn _, _ ->
          grown = native_peak(fn -> McpFramer.JSON.encode!(term) end)
          if grown >= div(text_bytes, 2), do: {:halt, grown}, else: {:cont, grown}
        end)

      assert grown >= div(text_bytes, 2),
             "native memory grew by #{grown} bytes while #{text_bytes} bytes of JSON " <>
               "were written"
    end

    test "between calls the NIF keeps at most 2.5 MiB a scheduler thread, whatever it decoded or encoded" do
      # Each job grows one of the decoder's or the encoder's buffers far
      # past what is kept of it. A call runs on one normal scheduler and
      # at most one dirty one, so a job adds what two threads keep at most.
      allowed = 2 * round(2.5 * @mib)

      for {name, job} <- jobs() do
        before = settled_native_memory()
        job |> Task.async() |> Task.await(120_000)
        kept = settled_native_memory() - before

        assert kept <= allowed,
               "after #{name}, the NIF keeps #{kept} bytes more between calls, over #{allowed}"
      end
    end

    test "a framer keeps at most 64 KiB of the NIF's memory once a chunk of millions of messages is framed" do
      # 8 MiB, framed on a dirty scheduler in one call: 4 million messages,
      # 32 MiB of room for their terms while the call runs. The framers
      # all stay alive, so that what each keeps (64 KiB, and the 4 KiB a
      # framer may hold besides) is read above the 64 KiB within which the
      # measure holds still.
      chunk = :binary.copy("1\n", 4 * @mib)
      count = 8
      before = settled_native_memory()

      framers =
        for _ <- 1..count do
          Task.async(fn ->
            {:ok, messages, framer} = McpFramer.feed(McpFramer.new(), chunk)
            assert length(messages) == 4 * @mib
            framer
          end)
          |> Task.await(60_000)
        end

      kept = settled_native_memory() - before
      assert Enum.all?(framers, &(McpFramer.buffered_bytes(&1) == 0))
      allowed = count * (64 + 4) * @kib + 64 * @kib
      assert kept <= allowed, "#{count} framers keep #{kept} bytes of the NIF's memory"
    end
  end

  defp jobs do
    deep = 500_000
    values = Enum.join(1..1_000_000, ",")
    keys = Enum.map_join(1..200_000, ",", &~s("k#{&1}":#{&1}))
    escaped = IO.iodata_to_binary([?", List.duplicate("text\\n", 500_000), ?"])

    [
      {"a document of two million [",
       fn -> McpFramer.JSON.decode(String.duplicate("[", 2_000_000)) end},
      {"an array of a million numbers", fn -> McpFramer.JSON.decode("[" <> values <> "]") end},
      {"200,000 keys checked for repeats",
       fn -> McpFramer.JSON.decode("{" <> keys <> "}", duplicate_keys: :error) end},
      {"3 MB of escaped text", fn -> McpFramer.JSON.decode(escaped) end},
      {"a decoding framer's large messages",
       fn ->
         stream = McpFramer.stream([escaped, "\n", "[" <> values <> "]\n"], decode: :json)
         Enum.count(stream)
       end},
      # Maps whose keys are of two kinds are checked for repeats, a set of
      # keys for each map open.
      {"maps 500,000 deep under maps: :strict",
       fn ->
         nested = Enum.reduce(1..deep, 0, fn n, inner -> %{"in" => inner, :n => n} end)
         McpFramer.JSON.encode!(nested, maps: :strict)
       end},
      {"a map of 200,000 pairs",
       fn -> McpFramer.JSON.encode!(Map.new(1..200_000, &{"k#{&1}", &1})) end},
      {"20 MB of strings to escape",
       fn -> McpFramer.JSON.encode!(List.duplicate(:binary.copy("x\"", 1_000), 10_000)) end},
      {"lists 500,000 deep",
       fn -> McpFramer.JSON.encode!(Enum.reduce(1..deep, [], &[&2, &1])) end}
    ]
  end

  # How far native memory rose above where it settled while `fun` ran.
  defp native_peak(fun) do
    before = settled_native_memory()
    watcher = spawn_link(fn -> watch_native_memory(0) end)
    fun.()
    send(watcher, {:stop, self()})
    assert_receive {:peak, peak}, 10_000
    peak - before
  end

  # Polls native memory until told to stop, without a pause: polled each
  # millisecond, a call's peak was missed on its first run in a VM.
  # Replies with the most it saw.
  defp watch_native_memory(peak) do
    receive do
      {:stop, parent} -> send(parent, {:peak, max(peak, native_memory())})
    after
      0 -> watch_native_memory(max(peak, native_memory()))
    end
  end

  defp native_memory do
    memory = :erlang.memory([:system, :binary, :code, :ets, :atom])
    memory[:system] - memory[:binary] - memory[:code] - memory[:ets] - memory[:atom]
  end

  defp settled_native_memory, do: settled(&native_memory/0)

  # Messages of the given sizes, each numbered so that none repeats, and
  # where each lies in the stream ({first byte, last byte}).
  defp numbered_stream(sizes) do
    {lines, {_, spans}} =
      sizes
      |> Enum.with_index()
      |> Enum.map_reduce({0, []}, fn {size, n}, {at, spans} ->
        id = Integer.to_string(n)
        line = id <> :binary.copy(<<?a + rem(n, 26)>>, size - byte_size(id)) <> "\n"
        {line, {at + size + 1, [{at, at + size - 1} | spans]}}
      end)

    {IO.iodata_to_binary(lines), Enum.reverse(spans)}
  end

  # Each chunk a binary of its own, as a Port delivers them.
  defp port_chunks(stream, :random) do
    :rand.seed(:exsss, {7, 8, 9})
    Chunks.cut(stream, fn _ -> :rand.uniform(65_536) end)
  end

  defp port_chunks(stream, size), do: Chunks.cut(stream, size)

  # Whether the bytes from..to lie in more than one chunk.
  defp crosses?(chunks, from, to) do
    {_, first, last} =
      Enum.reduce(chunks, {0, nil, nil}, fn chunk, {at, first, last} ->
        stop = at + byte_size(chunk)
        first = if from >= at and from < stop, do: at, else: first
        last = if to >= at and to < stop, do: at, else: last
        {stop, first, last}
      end)

    first != last
  end

  defp frame_partial(%module{} = framer, chunks) do
    Enum.reduce(chunks, framer, fn chunk, framer ->
      {:ok, _messages, framer} = module.feed(framer, chunk)
      framer
    end)
  end

  # The binary memory that `count` framers made by `make_framer` keep,
  # once everything but the framers is garbage. Each is made in a process
  # of its own, which keeps only the framer and collects its garbage.
  defp held_memory(count, make_framer) do
    before = settled_binary_memory()
    parent = self()

    holders =
      for _ <- 1..count do
        spawn(fn ->
          framer = make_framer.()
          :erlang.garbage_collect()
          send(parent, {:held, self()})
          receive do: (:exit -> framer)
        end)
      end

    for pid <- holders, do: assert_receive({:held, ^pid}, 60_000)
    used = settled_binary_memory() - before
    for pid <- holders, do: send(pid, :exit)
    used
  end

  # What the README allows a framer holding `held` bytes, its partial
  # message started in a chunk of `chunk_size`: those bytes, the chunk and
  # 4 KiB, its own state (under 1 KiB), and up to 64 bytes for the VM's
  # header of each binary the bytes are in: each chunk of 1 KiB or more,
  # kept, or else each 64 KiB gathered.
  defp allowed_per_framer(held, chunk_size) do
    binaries =
      if chunk_size >= @kib,
        do: div(held + chunk_size - 1, chunk_size) + 1,
        else: div(held + 64 * @kib - 1, 64 * @kib)

    held + chunk_size + 4 * @kib + @kib + 64 * binaries
  end

  defp feed_any(framer, chunk) do
    case McpFramer.feed(framer, chunk) do
      {:ok, [], framer} -> framer
      {:error, :message_too_large, [], framer} -> framer
    end
  end

  defp binary_memory, do: :erlang.memory(:binary)

  defp settled_binary_memory, do: settled(&binary_memory/0)

  # Memory of earlier tests may still be on its way back to the allocator
  # (it frees blocks of other threads later); wait until `measure` holds
  # still, so that its release is not read as ours.
  defp settled(measure, last \\ nil, tries \\ 40) do
    last = last || measure.()
    Process.sleep(50)
    now = measure.()

    if abs(now - last) < 64 * @kib or tries == 0,
      do: now,
      else: settled(measure, now, tries - 1)
  end

  # Polls for up to 10 s until `done?` holds for `measure`; returns the last value.
  defp wait_until(measure, done?, tries \\ 200) do
    value = measure.()

    if done?.(value) or tries == 0 do
      value
    else
      Process.sleep(50)
      wait_until(measure, done?, tries - 1)
    end
  end
end
