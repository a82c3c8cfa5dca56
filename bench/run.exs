# make bench: McpFramer against the pure-Elixir baseline on traffic shaped
# like a Port's, interleaved, best of @rounds runs each; then a trace file
# through a real stream-mode Port. Then the same for decoding: McpFramer
# with decode: :json against the baseline followed by jiffy, and by
# Elixir's JSON on Elixir 1.18+, and against the floor, the baseline
# followed by :erlang.binary_to_term/1 of each message's terms encoded
# before the run. Then large documents (bench/documents.exs), and
# encoding (bench/encode.exs). Requiring
# this file defines the workloads; `Bench.main()` runs them (make bench:
# mix run -r bench/run.exs -e "Bench.main()"), and bench/compare.exs
# reuses them.
Code.require_file("../test/support/pure_framer.ex", __DIR__)

defmodule Bench.Traffic do
  # Streams and their chunks, from a fixed seed. Every message is distinct
  # (its own id and its own slice of random text), sizes vary so that
  # boundaries fall anywhere, and every chunk is a binary of its own, as a
  # Port delivers them.

  @kib 1024
  @mib 1024 * 1024

  def seed(n), do: :rand.seed(:exsss, {n, 1, 2})

  # Random printable text without newlines, to slice message bodies from.
  def text do
    seed(0)
    for _ <- 1..(8 * @mib), into: <<>>, do: <<Enum.random(?\s..?~)>>
  end

  # JSON-RPC lines of the sizes `size.()` draws, up to `total` bytes; every
  # `crlf`-th line ends in CRLF.
  def stream(text, total, size, crlf \\ 7) do
    Stream.iterate(1, &(&1 + 1))
    |> Enum.reduce_while({[], 0}, fn id, {lines, bytes} ->
      if bytes >= total do
        {:halt, {lines, bytes}}
      else
        line = line(text, id, size.(), if(rem(id, crlf) == 0, do: "\r\n", else: "\n"))
        {:cont, {[line | lines], bytes + IO.iodata_length(line)}}
      end
    end)
    |> elem(0)
    |> Enum.reverse()
  end

  defp line(text, id, size, ending) do
    head = ~s({"jsonrpc":"2.0","id":#{id},"result":{"content":[{"type":"text","text":")
    tail = ~s("}]}}) <> ending
    body = max(size - byte_size(head) - byte_size(tail), 0)
    from = :rand.uniform(byte_size(text) - body) - 1
    [head, binary_part(text, from, body), tail]
  end

  def between(low, high), do: fn -> low + :rand.uniform(high - low + 1) - 1 end

  # An MCP session: mostly small requests and notifications, some tool
  # results of kilobytes, a few large ones, rarely megabytes.
  def mixed_size do
    case :rand.uniform(1000) do
      n when n <= 800 -> between(80, 600).()
      n when n <= 970 -> between(1_000, 40_000).()
      n when n <= 998 -> between(50_000, 500_000).()
      _ -> between(1_000_000, 4_000_000).()
    end
  end

  # What a pipe read returns: mostly full 64 KiB, sometimes what a writer's
  # 4 or 8 KiB buffer flushed, sometimes whatever was there.
  def pipe_size do
    case :rand.uniform(10) do
      n when n <= 7 -> 64 * @kib
      8 -> 4 * @kib
      9 -> 8 * @kib
      _ -> :rand.uniform(64 * @kib)
    end
  end

  # Cuts iodata into fresh binaries of the sizes `size.()` draws.
  def chunks(iodata, size) do
    stream = IO.iodata_to_binary(iodata)
    cut(stream, size, 0, [])
  end

  defp cut(stream, _size, at, acc) when at >= byte_size(stream), do: Enum.reverse(acc)

  defp cut(stream, size, at, acc) do
    n = min(size.(), byte_size(stream) - at)
    cut(stream, size, at + n, [:binary.copy(binary_part(stream, at, n)) | acc])
  end

  # Each line a chunk of its own: a server that writes and flushes each.
  def one_per_chunk(lines), do: Enum.map(lines, &IO.iodata_to_binary/1)

  # The same message over and over (the rows kept from the first benchmark).
  def repeated(size, total, ending \\ "\n") do
    head = ~s({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":")
    tail = ~s("}]}}) <> ending
    line = head <> :binary.copy("a", size - byte_size(head) - byte_size(tail)) <> tail
    :binary.copy(line, max(div(total, size), 1))
  end

  def fixed(n), do: fn -> n end
end

# The decoding rows' messages, built with Bench.Traffic's helpers.
Code.require_file("decode_traffic.exs", __DIR__)

defmodule Bench do
  alias Bench.Traffic, as: T
  alias McpFramer.PureFramer

  @rounds 7
  @port_rounds 5
  @kib 1024
  @mib 1024 * 1024

  # {name, goal, chunks built lazily}. A goal is the least ratio (baseline
  # time / McpFramer time) wanted, or :parity for rows where both framers
  # read every byte once and copy each spanning message once, at memory
  # speed: there the goal is 1.0x on a quiet run and never below 0.95x.
  def workloads(text) do
    [
      {"mixed MCP trace, pipe-sized chunks", :parity,
       fn -> T.chunks(T.stream(text, 48 * @mib, &T.mixed_size/0), &T.pipe_size/0) end},
      {"~300 B msgs, one per chunk", 1.3,
       fn -> T.one_per_chunk(T.stream(text, 8 * @mib, T.between(200, 400))) end},
      {"~200 B msgs, 64 KiB chunks", 2.0,
       fn -> T.chunks(T.stream(text, 32 * @mib, T.between(100, 300)), T.fixed(64 * @kib)) end},
      {"~16 KiB msgs, 64 KiB chunks", :parity,
       fn ->
         T.chunks(T.stream(text, 32 * @mib, T.between(8 * @kib, 24 * @kib)), T.fixed(64 * @kib))
       end},
      {"~100 KiB msgs, 8 KiB chunks", :parity,
       fn ->
         T.chunks(T.stream(text, 32 * @mib, T.between(50 * @kib, 150 * @kib)), T.fixed(8 * @kib))
       end},
      {"~4 MiB msgs, 64 KiB chunks", :parity,
       fn ->
         T.chunks(T.stream(text, 64 * @mib, T.between(3 * @mib, 5 * @mib)), T.fixed(64 * @kib))
       end},
      {"~4 MiB msgs, 4 KiB chunks", :parity,
       fn ->
         T.chunks(T.stream(text, 64 * @mib, T.between(3 * @mib, 5 * @mib)), T.fixed(4 * @kib))
       end},
      {"200 B CRLF, 4 KiB chunks", 2.0,
       fn -> T.chunks(T.repeated(200, 16 * @mib, "\r\n"), T.fixed(4 * @kib)) end},
      {"{} msgs, 64 KiB chunks", 3.0,
       fn -> T.chunks(:binary.copy("{}\n", div(8 * @mib, 3)), T.fixed(64 * @kib)) end},
      {"200 B msgs, 16 B chunks", 1.0,
       fn -> T.chunks(T.repeated(200, 2 * @mib), T.fixed(16)) end},
      {"64 MiB oversize line", :parity,
       fn -> T.chunks([:binary.copy("x", 64 * @mib), "\n"], T.fixed(64 * @kib)) end}
    ]
  end

  # Each run has a process of its own, so that no run inherits the heap or
  # the garbage of the workloads before it. The process frames the chunks
  # once to warm up, as a long-lived client process is, and then once on
  # the clock.
  def run(module, chunks) do
    Task.async(fn ->
      frame_all(module, chunks)
      {micros, count} = :timer.tc(fn -> frame_all(module, chunks) end)
      {max(micros, 1), count}
    end)
    |> Task.await(:infinity)
  end

  defp frame_all(module, chunks) do
    Enum.reduce(chunks, {module.new(), 0}, fn chunk, {framer, count} ->
      case module.feed(framer, chunk) do
        {:ok, messages, framer} -> {framer, count + length(messages)}
        {:error, :message_too_large, messages, framer} -> {framer, count + length(messages)}
      end
    end)
    |> elem(1)
  end

  def measure({name, goal, make_chunks}, n) do
    T.seed(n)
    chunks = make_chunks.()

    {nif, elixir, count} =
      Enum.reduce(1..@rounds, {:infinity, :infinity, 0}, fn _, {nif, elixir, _} ->
        {e, count} = run(PureFramer, chunks)
        {n, ^count} = run(McpFramer, chunks)
        {min(nif, n), min(elixir, e), count}
      end)

    bytes = Enum.reduce(chunks, 0, &(byte_size(&1) + &2))
    %{name: name, bytes: bytes, messages: count, nif: nif, elixir: elixir, goal: goal}
  end

  # A trace file through `cat` and a real stream-mode Port, framed by each
  # framer as the Port delivers it, and by OTP's own {:line, 65536} mode.
  def port_trace(text) do
    T.seed(99)
    path = Path.join(System.tmp_dir!(), "mcp_framer_bench_trace.jsonl")
    File.write!(path, T.stream(text, 128 * @mib, &T.mixed_size/0))
    cat = System.find_executable("cat")

    ways = [
      {"baseline", fn -> port_frame(cat, path, [:stream], PureFramer) end},
      {"McpFramer", fn -> port_frame(cat, path, [:stream], McpFramer) end},
      {"{:line, 65536}", fn -> port_frame(cat, path, [line: 65_536], :line) end}
    ]

    best =
      Enum.reduce(1..@port_rounds, %{}, fn _, best ->
        Enum.reduce(ways, best, fn {name, frame}, best ->
          {micros, count} = Task.async(fn -> :timer.tc(frame) end) |> Task.await(:infinity)
          Map.update(best, name, {micros, count}, fn {m, ^count} -> {min(m, micros), count} end)
        end)
      end)

    size = File.stat!(path).size
    File.rm!(path)
    {size, for({name, _} <- ways, do: {name, best[name]})}
  end

  defp port_frame(cat, path, mode, framer) do
    port = Port.open({:spawn_executable, cat}, [:binary, :exit_status, args: [path]] ++ mode)
    receive_all(port, start(framer), 0)
  end

  defp start(:line), do: {:line, []}
  defp start(module), do: {module, module.new()}

  defp receive_all(port, state, count) do
    receive do
      {^port, {:data, data}} ->
        {state, n} = take(state, data)
        receive_all(port, state, count + n)

      {^port, {:exit_status, 0}} ->
        count
    end
  end

  defp take({:line, pending}, {:noeol, part}), do: {{:line, [pending | part]}, 0}

  defp take({:line, pending}, {:eol, part}) do
    line = IO.iodata_to_binary([pending | part])
    size = byte_size(line)

    line =
      if size > 0 and :binary.last(line) == ?\r, do: binary_part(line, 0, size - 1), else: line

    {{:line, []}, if(line == "", do: 0, else: 1)}
  end

  defp take({module, framer}, chunk) do
    case module.feed(framer, chunk) do
      {:ok, messages, framer} -> {{module, framer}, length(messages)}
      {:error, :message_too_large, messages, framer} -> {{module, framer}, length(messages)}
    end
  end

  # This machine's limits, measured by the BEAM's own memchr and memcpy.
  def limits do
    big = :binary.copy("x", 256 * @mib)

    scan = best(fn -> :nomatch = :binary.match(big, "\n") end)
    copy = best(fn -> :binary.copy(big) end)
    {mb_per_s(byte_size(big), scan), mb_per_s(byte_size(big), copy)}
  end

  defp best(fun) do
    Enum.map(1..5, fn _ -> elem(:timer.tc(fun), 0) end) |> Enum.min()
  end

  def mb_per_s(bytes, micros), do: bytes / micros

  # Which instruction set McpFramer's string code runs. The NIF ignores an
  # MCP_FRAMER_ISA this CPU lacks, so a misspelt one would measure the
  # widest under another's name: that stops the run instead, as does a
  # NIF built with debug assertions (MCP_FRAMER_CARGO_PROFILE=checked
  # left in the shell), which is not what anyone ships.
  def instruction_set! do
    {running, available} = McpFramer.Native.instruction_set()
    named = System.get_env("MCP_FRAMER_ISA", "")

    if McpFramer.Native.debug_assertions() do
      raise "the NIF was built with debug assertions (MCP_FRAMER_CARGO_PROFILE=checked): " <>
              "unset it and measure the release build"
    end

    if named not in ["", running] do
      raise "MCP_FRAMER_ISA=#{named} names no instruction set this CPU has " <>
              "(#{Enum.join(available, ", ")})"
    end

    "instruction set: #{running} (this CPU has #{Enum.join(available, ", ")})"
  end

  def ratio(x), do: :erlang.float_to_binary(x, decimals: 2) <> "x"

  def main do
    {scan, copy} = limits()
    {cpu, _} = System.cmd("sh", ["-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"])

    IO.puts(
      "machine: #{String.trim(cpu)}, #{System.schedulers_online()} schedulers, " <>
        "OTP #{System.otp_release()}, Elixir #{System.version()}"
    )

    IO.puts(instruction_set!())

    IO.puts(
      "limits: memchr (:binary.match) #{round(scan)} MB/s, memcpy (:binary.copy) #{round(copy)} MB/s"
    )

    IO.puts("best of #{@rounds} interleaved runs; ratio = baseline time / McpFramer time\n")

    IO.puts("| workload | McpFramer MB/s | McpFramer msgs/s | baseline MB/s | ratio | goal |")
    IO.puts("|---|---:|---:|---:|---:|---:|")

    # BENCH_ONLY="4 MiB" runs only the workloads whose name contains it.
    only = System.get_env("BENCH_ONLY", "")
    text = T.text()

    results =
      for {{name, _, _} = w, n} <- Enum.with_index(workloads(text), 1), name =~ only do
        r = measure(w, n)
        ratio = r.elixir / r.nif
        mark = if met?(ratio, r.goal), do: "", else: " (below goal)"

        IO.puts(
          "| #{r.name} | #{round(mb_per_s(r.bytes, r.nif))} | #{round(r.messages * 1_000_000 / r.nif)} | " <>
            "#{round(mb_per_s(r.bytes, r.elixir))} | #{ratio(ratio)}#{mark} | #{goal(r.goal)} |"
        )

        r
      end

    below = Enum.count(results, &(not met?(&1.elixir / &1.nif, &1.goal)))
    IO.puts("\n#{length(results) - below} of #{length(results)} workloads at or above their goal")

    if only == "" or "port" =~ only, do: print_port(port_trace(text))

    Bench.Decoding.main(only)
    Bench.Documents.main(only)
    Bench.Encoding.main(only)
  end

  # A parity row below 1.0x but not below 0.95x is within this shared
  # machine's noise; the README reports its range over several runs.
  # A row without a goal meets it.
  def met?(_ratio, nil), do: true
  def met?(ratio, :parity), do: ratio >= 0.95
  def met?(ratio, goal), do: ratio >= goal

  def goal(nil), do: ""
  def goal(:parity), do: "parity"
  def goal(goal), do: "#{goal}x"

  defp print_port({size, results}) do
    {baseline, _} = results |> List.keyfind("baseline", 0) |> elem(1)

    IO.puts(
      "\nA #{div(size, @mib)} MiB mixed trace through `cat` and a stream-mode Port, " <>
        "best of #{@port_rounds}; ratio = baseline time / this time\n"
    )

    IO.puts("| framed by | MB/s | messages | ratio |")
    IO.puts("|---|---:|---:|---:|")

    for {name, {micros, count}} <- results do
      IO.puts(
        "| #{name} | #{round(mb_per_s(size, micros))} | #{count} | #{ratio(baseline / micros)} |"
      )
    end
  end
end

# Mix from Elixir 1.15 on keeps only the project's applications on the
# code path; Debian's erlang-jiffy lives beside OTP's own.
for ebin <- Path.wildcard(Path.join(:code.lib_dir(), "jiffy-*/ebin")), do: Code.prepend_path(ebin)

defmodule Bench.Decoding do
  # The decoding rows: McpFramer.new(decode: :json) against the pure-Elixir
  # framer followed by a decoder on every message: jiffy's
  # :jiffy.decode(message, [:return_maps]), a C NIF, the usual fast choice
  # on the BEAM, and Elixir's own JSON.decode/1 (Elixir 1.18+), which the
  # Elixir MCP clients use. Each is measured where this BEAM has it.
  # jiffy's terms are not quite Jason's, which McpFramer's are: null is the
  # atom :null, not nil, and duplicate keys and invalid input may be taken
  # differently. The traffic is valid JSON and only time is compared, so
  # that does not matter here. Jason is measured too when it is on the code
  # path (it cannot be installed here, and nothing in the repository needs
  # it; bench/README.md says how); else its rows are listed unmeasured.
  #
  # Both sides are treated alike: each turns a chunk into a list of items,
  # {:ok, term} or {:error, reason}, one per message, which the loop counts
  # and drops; each run has a fresh process, warmed up by one pass.

  alias Bench.DecodeTraffic, as: D
  alias Bench.Traffic, as: T
  alias McpFramer.PureFramer

  @rounds 5
  @port_rounds 3
  @kib 1024
  @mib 1024 * 1024

  # {name, goals, a function that builds the chunks from the text pool and
  # the random bytes}. The goals are the least ratios wanted against the
  # framer followed by jiffy (OTP 25 here), by Elixir's JSON (OTP 29), by
  # Jason, and by simdjson's NIF (simdjsone; see bench/README.md). Chunks
  # are pipe-sized and cut at random points, as Bench.Traffic.pipe_size/0
  # draws them, unless the name says otherwise.
  def rows do
    pipe = &T.pipe_size/0

    [
      {"mixed MCP trace", [jiffy: 4.5, json: 7.0, jason: 8.0, simdjson: 1.5],
       fn {pool, noise} -> T.chunks(D.stream(32 * @mib, &D.mixed(pool, noise, &1)), pipe) end},
      {"progress notifications, ~150 B", [jiffy: 3.5, json: 4.0, jason: 3.5, simdjson: 1.5],
       fn {pool, _} -> T.chunks(D.stream(8 * @mib, &D.progress(pool, &1)), pipe) end},
      {"tools/list results, schema-heavy",
       [jiffy: 3.0, json: 3.5, jason: 3.5, simdjson: 1.5, floor: 1.5],
       fn {pool, _} -> T.chunks(D.stream(16 * @mib, &D.tools_list(pool, &1)), pipe) end},
      {"text results with escapes, 1-30 KB", [jiffy: 4.5, json: 10.0, jason: 8.0, simdjson: 1.5],
       fn {pool, _} ->
         size = T.between(1 * @kib, 30 * @kib)
         T.chunks(D.stream(16 * @mib, &D.text_result(pool, &1, size.())), pipe)
       end},
      {"text escaped to ASCII (.NET, Python), 1-30 KB", [],
       fn {pool, _} ->
         ascii = D.ascii(pool)
         size = T.between(1 * @kib, 30 * @kib)
         T.chunks(D.stream(16 * @mib, &D.text_result(ascii, &1, size.())), pipe)
       end},
      {"base64 blobs, 50-550 KB", [jiffy: 5.5, json: 6.0, jason: 15.0, simdjson: 1.5],
       fn {_, noise} ->
         size = T.between(50 * @kib, 550 * @kib)
         T.chunks(D.stream(32 * @mib, &D.blob_result(noise, &1, size.())), pipe)
       end},
      {"~300 B msgs, one per chunk", [jiffy: 3.0, json: 4.0, jason: 3.0, simdjson: 1.5],
       fn {pool, _} -> T.one_per_chunk(D.stream(4 * @mib, &D.small(pool, &1))) end}
    ]
  end

  # Each side: how to start, and what a chunk becomes. A baseline is named
  # after its decoder.
  def sides do
    baselines =
      for {name, decode} <- decoders() do
        {name, {&PureFramer.new/0, &baseline_feed(&1, &2, decode)}}
      end

    [{:mcp_framer, {fn -> McpFramer.new(decode: :json) end, &mcp_framer_feed/2}} | baselines]
  end

  # The decoders this BEAM has: jiffy where Debian packages it (bookworm,
  # trixie), JSON from Elixir 1.18 on, Jason and simdjson's NIF where they
  # are on the code path (bench/README.md says how to build them). Chosen
  # when this file compiles, so that no call to a missing module is
  # compiled.
  def decoders, do: jiffy() ++ json() ++ jason() ++ simdjson()

  if Code.ensure_loaded?(:jiffy) do
    defp jiffy, do: [jiffy: &jiffy/1]

    defp jiffy(message) do
      {:ok, :jiffy.decode(message, [:return_maps])}
    catch
      :error, reason -> {:error, reason}
    end
  else
    defp jiffy, do: []
  end

  if Code.ensure_loaded?(JSON) do
    defp json, do: [json: &JSON.decode/1]
  else
    defp json, do: []
  end

  if Code.ensure_loaded?(Jason) do
    defp jason, do: [jason: &Jason.decode/1]
  else
    defp jason, do: []
  end

  # simdjsone raises on invalid JSON, and returns the term itself.
  if Code.ensure_loaded?(:simdjson) do
    defp simdjson, do: [simdjson: &simdjson/1]

    defp simdjson(message) do
      {:ok, :simdjson.decode(message)}
    catch
      :error, reason -> {:error, reason}
    end
  else
    defp simdjson, do: []
  end

  @labels %{jiffy: "jiffy", json: "JSON", jason: "Jason", simdjson: "simdjson"}

  defp baseline_feed(framer, chunk, decode) do
    case PureFramer.feed(framer, chunk) do
      {:ok, messages, framer} -> {Enum.map(messages, decode), framer}
      {:error, :message_too_large, messages, framer} -> {Enum.map(messages, decode), framer}
    end
  end

  # The floor: the pure framer, then each message's terms made by
  # :erlang.binary_to_term/1 from a binary encoded before the run, which is
  # what the BEAM itself takes to make the terms every decoder returns.
  # The binaries are taken in order, one per message framed.
  def floor_side(messages) do
    encoded = for m <- messages, do: :erlang.term_to_binary(McpFramer.JSON.decode!(m))
    {fn -> {PureFramer.new(), encoded} end, &floor_feed/2}
  end

  # The messages of a row, framed.
  def messages(chunks) do
    {messages, _} =
      Enum.flat_map_reduce(chunks, PureFramer.new(), fn chunk, framer ->
        {:ok, messages, framer} = PureFramer.feed(framer, chunk)
        {messages, framer}
      end)

    messages
  end

  # The same messages, each decoded by a call of McpFramer.JSON.decode/2,
  # as a caller with whole documents decodes them: without options, or
  # with limits no message reaches, as for untrusted documents.
  @limits [max_depth: 64, max_values: 1_000_000]
  def limits, do: @limits

  # `json` is McpFramer.JSON, or make compare's other version of it.
  def run_documents(messages, opts, json \\ McpFramer.JSON) do
    Task.async(fn ->
      decode_all(json, messages, opts)
      :timer.tc(fn -> decode_all(json, messages, opts) end)
    end)
    |> Task.await(:infinity)
  end

  defp decode_all(json, messages, opts) do
    Enum.reduce(messages, {0, 0}, fn message, {ok, failed} ->
      case json.decode(message, opts) do
        {:ok, _} -> {ok + 1, failed}
        {:error, _} -> {ok, failed + 1}
      end
    end)
  end

  defp floor_feed({framer, encoded}, chunk) do
    {:ok, messages, framer} = PureFramer.feed(framer, chunk)

    {items, encoded} =
      Enum.map_reduce(messages, encoded, fn _message, [term | encoded] ->
        {{:ok, :erlang.binary_to_term(term)}, encoded}
      end)

    {items, {framer, encoded}}
  end

  defp mcp_framer_feed(framer, chunk) do
    case McpFramer.feed(framer, chunk) do
      {:ok, items, framer} -> {items, framer}
      {:error, :message_too_large, items, framer} -> {items, framer}
    end
  end

  def run({new, feed}, chunks) do
    Task.async(fn ->
      ingest(new, feed, chunks)
      {micros, tally} = :timer.tc(fn -> ingest(new, feed, chunks) end)
      {max(micros, 1), tally}
    end)
    |> Task.await(:infinity)
  end

  defp ingest(new, feed, chunks) do
    {_framer, tally} =
      Enum.reduce(chunks, {new.(), {0, 0}}, fn chunk, {framer, tally} ->
        {items, framer} = feed.(framer, chunk)
        {framer, tally(items, tally)}
      end)

    tally
  end

  # {decoded, failed}
  defp tally([{:ok, _} | items], {ok, failed}), do: tally(items, {ok + 1, failed})
  defp tally([{:error, _} | items], {ok, failed}), do: tally(items, {ok, failed + 1})
  defp tally([], tally), do: tally

  # Every message of the traffic is valid JSON: both sides must decode
  # them all, or one of them is not doing the work.
  defp check!(name, tallies) do
    case Enum.uniq(Keyword.values(tallies)) do
      [{_ok, 0}] -> :ok
      _ -> raise "#{name}: the sides disagree or failed: #{inspect(tallies)}"
    end
  end

  # The text pool and random bytes every row's traffic is drawn from.
  def source do
    T.seed(100)
    {D.pool(), D.noise()}
  end

  # Row `n`'s chunks, the same on every run.
  def chunks({_, _, make_chunks}, n, source) do
    T.seed(n)
    make_chunks.(source)
  end

  def measure({name, goals, _} = row, n, source) do
    chunks = chunks(row, n, source)
    messages = messages(chunks)
    sides = sides() ++ [floor: floor_side(messages)]

    best =
      Enum.reduce(1..@rounds, %{}, fn round, best ->
        results = for {side, ingest} <- sides, do: {side, run(ingest, chunks)}
        # The first to run after the framers finds memory they left behind
        # (blobs decoded one call each ran 1.2-2x slower first): the two
        # take turns.
        documents = [documents: [], limited: @limits]
        documents = if rem(round, 2) == 0, do: Enum.reverse(documents), else: documents

        results =
          results ++ for {side, opts} <- documents, do: {side, run_documents(messages, opts)}

        check!(name, for({side, {_, tally}} <- results, do: {side, tally}))

        Enum.reduce(results, best, fn {side, {micros, {ok, _}}}, best ->
          Map.update(best, side, {micros, ok}, fn {m, ok} -> {min(m, micros), ok} end)
        end)
      end)

    {nif, count} = best.mcp_framer

    baselines =
      for {side, {micros, _}} <- best, side != :mcp_framer, into: %{}, do: {side, micros}

    bytes = Enum.reduce(chunks, 0, &(byte_size(&1) + &2))
    %{name: name, bytes: bytes, messages: count, nif: nif, baselines: baselines, goals: goals}
  end

  # A mixed trace file through `cat` and a real stream-mode Port, framed
  # and decoded by each side as the Port delivers it.
  def port_trace({pool, noise}) do
    T.seed(199)
    path = Path.join(System.tmp_dir!(), "mcp_framer_bench_decode_trace.jsonl")
    File.write!(path, D.stream(64 * @mib, &D.mixed(pool, noise, &1)))
    cat = System.find_executable("cat")

    best =
      Enum.reduce(1..@port_rounds, %{}, fn _, best ->
        results =
          for {side, ingest} <- sides() do
            task = Task.async(fn -> :timer.tc(fn -> port_ingest(cat, path, ingest) end) end)
            {side, Task.await(task, :infinity)}
          end

        check!("Port", for({side, {_, tally}} <- results, do: {side, tally}))

        Enum.reduce(results, best, fn {side, {micros, {ok, _}}}, best ->
          Map.update(best, side, {micros, ok}, fn {m, ok} -> {min(m, micros), ok} end)
        end)
      end)

    size = File.stat!(path).size
    File.rm!(path)
    {size, best}
  end

  defp port_ingest(cat, path, {new, feed}) do
    port = Port.open({:spawn_executable, cat}, [:binary, :stream, :exit_status, args: [path]])
    receive_all(port, feed, new.(), {0, 0})
  end

  defp receive_all(port, feed, framer, tally) do
    receive do
      {^port, {:data, chunk}} ->
        {items, framer} = feed.(framer, chunk)
        receive_all(port, feed, framer, tally(items, tally))

      {^port, {:exit_status, 0}} ->
        tally
    end
  end

  # BENCH_ONLY="decode" runs every decoding row, "decode port" the Port.
  def main(only) do
    rows =
      for {{name, _, _} = row, n} <- Enum.with_index(rows(), 101),
          "decode #{name}" =~ only,
          do: {n, row}

    port? = only == "" or "decode port" =~ only

    cond do
      rows == [] and not port? ->
        :ok

      Enum.empty?(decoders()) ->
        IO.puts("\nNo decoding rows: this BEAM has no JSON decoder to compare with")

      true ->
        source = source()
        results = for {n, row} <- rows, do: measure(row, n, source)
        for {side, _} <- decoders(), do: print_decoder(results, side)
        print_floor(results)
        print_documents(results)
        if rows != [] and Enum.empty?(jason()), do: print_missing(rows, :jason, "Jason.decode/1")

        if rows != [] and Enum.empty?(simdjson()),
          do: print_missing(rows, :simdjson, ":simdjson.decode/1")

        if port?, do: print_port(port_trace(source))
    end
  end

  @calls [
    jiffy: ":jiffy.decode(m, [:return_maps])",
    json: "Elixir's JSON.decode(m)",
    jason: "Jason.decode(m)",
    simdjson: ":simdjson.decode(m) (simdjsone)"
  ]

  defp print_decoder(results, side) do
    label = @labels[side]

    IO.puts(
      "\nDecoding: McpFramer.new(decode: :json) against the pure-Elixir framer followed by " <>
        "#{@calls[side]}, best of #{@rounds} interleaved runs; " <>
        "ratio = framer + #{label} time / McpFramer time\n"
    )

    IO.puts(
      "| traffic | McpFramer MB/s | McpFramer msgs/s | framer + #{label} MB/s | ratio | goal |"
    )

    IO.puts("|---|---:|---:|---:|---:|---:|")

    for r <- results do
      ratio = r.baselines[side] / r.nif
      mark = if Bench.met?(ratio, r.goals[side]), do: "", else: " (below goal)"

      IO.puts(
        "| #{r.name} | #{round(Bench.mb_per_s(r.bytes, r.nif))} | " <>
          "#{round(r.messages * 1_000_000 / r.nif)} | " <>
          "#{round(Bench.mb_per_s(r.bytes, r.baselines[side]))} | " <>
          "#{Bench.ratio(ratio)}#{mark} | #{Bench.goal(r.goals[side])} |"
      )
    end

    with_goal = Enum.filter(results, & &1.goals[side])
    below = Enum.count(with_goal, &(not Bench.met?(&1.baselines[side] / &1.nif, &1.goals[side])))

    IO.puts(
      "\n#{length(with_goal) - below} of #{length(with_goal)} rows with a goal against " <>
        "#{label} at or above it"
    )
  end

  defp print_floor(results) do
    IO.puts(
      "\nThe floor: the pure-Elixir framer, then each message's terms made by " <>
        ":erlang.binary_to_term/1 from binaries encoded before the run; " <>
        "ratio = McpFramer time / floor time, the goal at most that\n"
    )

    IO.puts("| traffic | McpFramer MB/s | floor MB/s | ratio | goal |")
    IO.puts("|---|---:|---:|---:|---:|")

    for r <- results do
      ratio = r.nif / r.baselines.floor
      goal = r.goals[:floor]
      mark = if goal && ratio > goal, do: " (above goal)", else: ""

      IO.puts(
        "| #{r.name} | #{round(Bench.mb_per_s(r.bytes, r.nif))} | " <>
          "#{round(Bench.mb_per_s(r.bytes, r.baselines.floor))} | " <>
          "#{Bench.ratio(ratio)}#{mark} | #{if goal, do: "#{goal}x", else: ""} |"
      )
    end
  end

  defp print_documents(results) do
    IO.puts(
      "\nThe same messages, each decoded by its own call of McpFramer.JSON.decode/1; " <>
        "ratio = its rate / a decoding framer's rate; with limits = decode/2 with " <>
        "#{inspect(@limits)}, which no message reaches, its rate / decode/1's\n"
    )

    IO.puts(
      "| traffic | McpFramer.JSON.decode/1 MB/s | decoding framer MB/s | ratio | " <>
        "with limits MB/s | ratio |"
    )

    IO.puts("|---|---:|---:|---:|---:|---:|")

    for r <- results do
      %{documents: documents, limited: limited} = r.baselines

      IO.puts(
        "| #{r.name} | #{round(Bench.mb_per_s(r.bytes, documents))} | " <>
          "#{round(Bench.mb_per_s(r.bytes, r.nif))} | #{Bench.ratio(r.nif / documents)} | " <>
          "#{round(Bench.mb_per_s(r.bytes, limited))} | #{Bench.ratio(documents / limited)} |"
      )
    end
  end

  # A decoder not on this BEAM's code path (bench/README.md says how to
  # put it there): its goals, unmeasured.
  defp print_missing(rows, side, call) do
    IO.puts("\nThe same rows against the pure-Elixir framer followed by #{call}:\n")
    IO.puts("| traffic | ratio | goal |")
    IO.puts("|---|---|---:|")

    for {_, {name, goals, _}} <- rows do
      IO.puts(
        "| #{name} | not measured: not on this BEAM's code path | #{Bench.goal(goals[side])} |"
      )
    end
  end

  # The ratio is against the first baseline: jiffy where this BEAM has it.
  defp print_port({size, best}) do
    [{first, _} | _] = decoders()
    {baseline, _} = best[first]

    IO.puts(
      "\nA #{div(size, @mib)} MiB mixed trace through `cat` and a stream-mode Port, framed and " <>
        "decoded, best of #{@port_rounds}; ratio = framer + #{@labels[first]} time / this time\n"
    )

    IO.puts("| framed and decoded by | MB/s | messages | ratio |")
    IO.puts("|---|---:|---:|---:|")

    labels =
      for({side, _} <- decoders(), do: {side, "pure framer + #{@labels[side]}"}) ++
        [mcp_framer: "McpFramer, decode: :json"]

    for {side, label} <- labels do
      {micros, count} = best[side]

      IO.puts(
        "| #{label} | #{round(Bench.mb_per_s(size, micros))} | #{count} | " <>
          "#{Bench.ratio(baseline / micros)} |"
      )
    end
  end
end

# Use Bench's helpers, so they are compiled after Bench.
Code.require_file("documents.exs", __DIR__)
Code.require_file("encode.exs", __DIR__)
