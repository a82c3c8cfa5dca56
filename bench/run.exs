# make bench: McpFramer against the pure-Elixir baseline on the same
# pre-split chunks, interleaved, best of @rounds runs each.
Code.require_file("../test/support/pure_framer.ex", __DIR__)

defmodule Bench do
  alias McpFramer.PureFramer

  @rounds 7
  @kib 1024
  @mib 1024 * 1024

  # {name, stream, chunk size, goal (baseline time / NIF time)}
  def workloads do
    [
      {"200 B msgs, 64 KiB chunks", messages(200, 32 * @mib), 64 * @kib, 4.0},
      {"16 KiB msgs, 64 KiB chunks", messages(16 * @kib, 32 * @mib), 64 * @kib, 1.25},
      {"4 MiB msgs, 64 KiB chunks", messages(4 * @mib, 64 * @mib), 64 * @kib, 1.3},
      {"4 MiB msgs, 4 KiB chunks", messages(4 * @mib, 64 * @mib), 4 * @kib, 1.5},
      {"200 B CRLF, 4 KiB chunks", messages(200, 16 * @mib, "\r\n"), 4 * @kib, 3.5},
      {"200 B msgs, 1 MiB chunks", messages(200, 32 * @mib), @mib, 3.0},
      {"{} msgs, 64 KiB chunks", :binary.copy("{}\n", div(8 * @mib, 3)), 64 * @kib, 3.0},
      {"200 B msgs, 16 B chunks", messages(200, 2 * @mib), 16, 2.5},
      {"64 MiB oversize line", :binary.copy("x", 64 * @mib) <> "\n", 64 * @kib, 1.0}
    ]
  end

  # JSON-RPC responses of `size` bytes each (line ending included).
  def messages(size, total, ending \\ "\n") do
    prefix = ~s({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":")
    suffix = ~s("}]}}) <> ending
    text = :binary.copy("a", size - byte_size(prefix) - byte_size(suffix))
    :binary.copy(prefix <> text <> suffix, max(div(total, size), 1))
  end

  def split(stream, size) do
    for offset <- 0..(byte_size(stream) - 1)//size do
      binary_part(stream, offset, min(size, byte_size(stream) - offset))
    end
  end

  # Each run has a process of its own, so that no run inherits the heap or
  # the garbage of the workloads before it, which otherwise sway both
  # framers by up to 2x. The process frames the chunks once to warm up, as a
  # long-lived client process is, and then once on the clock.
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

  def measure({name, stream, chunk_size, goal}) do
    chunks = split(stream, chunk_size)

    {nif, elixir, count} =
      Enum.reduce(1..@rounds, {:infinity, :infinity, 0}, fn _, {nif, elixir, _} ->
        {e, count} = run(PureFramer, chunks)
        {n, ^count} = run(McpFramer, chunks)
        {min(nif, n), min(elixir, e), count}
      end)

    %{name: name, bytes: byte_size(stream), messages: count, nif: nif, elixir: elixir, goal: goal}
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

  def main do
    {scan, copy} = limits()
    {cpu, _} = System.cmd("sh", ["-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"])

    IO.puts(
      "machine: #{String.trim(cpu)}, #{System.schedulers_online()} schedulers, " <>
        "OTP #{System.otp_release()}, Elixir #{System.version()}"
    )

    IO.puts(
      "limits: memchr (:binary.match) #{round(scan)} MB/s, memcpy (:binary.copy) #{round(copy)} MB/s"
    )

    IO.puts("best of #{@rounds} interleaved runs; ratio = baseline time / McpFramer time\n")

    header = "| workload | McpFramer MB/s | McpFramer msgs/s | baseline MB/s | ratio | goal |"
    IO.puts(header)
    IO.puts("|---|---:|---:|---:|---:|---:|")

    # BENCH_ONLY="4 MiB" runs only the workloads whose name contains it.
    only = System.get_env("BENCH_ONLY", "")
    results = for {name, _, _, _} = w <- workloads(), name =~ only, do: measure(w)

    for r <- results do
      ratio = r.elixir / r.nif
      mark = if ratio >= r.goal, do: "", else: " (below goal)"

      IO.puts(
        "| #{r.name} | #{round(mb_per_s(r.bytes, r.nif))} | #{round(r.messages * 1_000_000 / r.nif)} | " <>
          "#{round(mb_per_s(r.bytes, r.elixir))} | #{:erlang.float_to_binary(ratio, decimals: 2)}x#{mark} | " <>
          "#{r.goal}x |"
      )
    end

    below = Enum.count(results, &(&1.elixir / &1.nif < &1.goal))
    IO.puts("\n#{length(results) - below} of #{length(results)} workloads at or above their goal")
  end
end

Bench.main()
