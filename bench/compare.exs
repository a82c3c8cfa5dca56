# make compare REV=<git revision>: McpFramer as it is now against McpFramer
# at REV, on make bench's framing workloads, its decoding traffic and its
# encoding rows' terms, in one VM.
#
# Two make bench runs on a shared machine differ by more than a small
# regression: the whole VM lands on a fast or a slow state, and the ratio
# to the baseline moves 10-15% between runs. Here both versions run in the
# same VM, interleaved run by run, so the comparison sees the same state.
# REV's tree is exported under _build/compare, its modules renamed under
# `Rev.` (McpFramer becomes Rev.McpFramer, and its NIF registers as
# Elixir.Rev.McpFramer.Native), its NIF built with cargo, and its Elixir
# modules compiled and loaded here.
Code.require_file("run.exs", __DIR__)

defmodule Bench.Compare do
  alias Bench.Traffic, as: T

  @root Path.expand("..", __DIR__)

  def main(rev) do
    rounds = rounds!(System.get_env("ROUNDS", "15"))
    only = System.get_env("BENCH_ONLY", "")
    module = build(rev)

    IO.puts("McpFramer now against #{rev}, interleaved, #{rounds} runs each, in one VM")
    IO.puts(Bench.instruction_set!())
    IO.puts("(ROUNDS=N for more; the same code against itself can differ by 10% or more)")
    IO.puts("ratio = #{rev} time / time now: above 1.00x, now is faster\n")
    IO.puts("| workload | #{rev} MB/s | now MB/s | ratio, best runs | ratio, median runs |")
    IO.puts("|---|---:|---:|---:|---:|")

    text = T.text()

    for {{name, _goal, make_chunks}, n} <- Enum.with_index(Bench.workloads(text), 1),
        name =~ only do
      T.seed(n)
      chunks = make_chunks.()
      bytes = Enum.reduce(chunks, 0, &(byte_size(&1) + &2))
      times = interleave([module, McpFramer], &Bench.run(&1, chunks), rounds)
      print_row(name, bytes, times[module], times[McpFramer])
    end

    decoding(module, only, rounds)
    encoding(module, only, rounds)
  end

  # The decoding rows, each version framing with decode: :json.
  defp decoding(module, only, rounds) do
    rows =
      for {{name, _, _} = row, n} <- Enum.with_index(Bench.Decoding.rows(), 101),
          "decode #{name}" =~ only,
          do: {n, row}

    if rows != [] do
      source = Bench.Decoding.source()

      for {n, {name, _, _} = row} <- rows do
        chunks = Bench.Decoding.chunks(row, n, source)
        bytes = Enum.reduce(chunks, 0, &(byte_size(&1) + &2))
        times = interleave([module, McpFramer], &Bench.Decoding.run(decoding(&1), chunks), rounds)
        print_row("decode: " <> name, bytes, times[module], times[McpFramer])

        # Each message by its own call, with limits, as for untrusted
        # documents: what reading the options costs shows here. None for
        # a REV without the limits.
        {messages, json} = {Bench.Decoding.messages(chunks), Module.concat(module, JSON)}
        limits = Bench.Decoding.limits()

        if takes?(fn -> json.decode("[]", limits) end) do
          run = &Bench.Decoding.run_documents(messages, limits, &1)
          times = interleave([json, McpFramer.JSON], run, rounds)
          print_row("decode/2, limits: " <> name, bytes, times[json], times[McpFramer.JSON])
        end
      end
    end
  end

  # The encoding rows, each version's McpFramer.JSON.encode!/1 on the same
  # terms, which must give the same text; none for a REV without it.
  defp encoding(module, only, rounds) do
    json = Module.concat(module, JSON)

    rows =
      for {{name, _, _} = row, n} <- Enum.with_index(Bench.Encoding.rows(), 101),
          "encode #{name}" =~ only,
          Code.ensure_loaded?(json) and function_exported?(json, :encode!, 1),
          do: {n, row}

    if rows != [] do
      source = Bench.Decoding.source()

      for {n, {name, _, _} = row} <- rows do
        terms = Bench.Encoding.terms(row, n, source)
        texts = Enum.map(terms, &McpFramer.JSON.encode!/1)

        if Enum.map(terms, &json.encode!/1) != texts do
          raise "#{inspect(json)} writes other text than McpFramer.JSON for #{name}"
        end

        bytes = Enum.reduce(texts, 0, &(byte_size(&1) + &2))
        run = fn version -> {Bench.Encoding.run(&version.encode!/1, terms), :same} end
        times = interleave([json, McpFramer.JSON], run, rounds)
        print_row("encode: " <> name, bytes, times[json], times[McpFramer.JSON])

        # With an option that checks nothing in these terms (all their keys
        # are binaries): what reading the options costs; and laid out.
        for {label, opts} <- [
              {"maps: :strict", [maps: :strict]},
              {"pretty: true", [pretty: true]}
            ],
            takes?(fn -> json.encode!([], opts) end) do
          texts = Enum.map(terms, &McpFramer.JSON.encode!(&1, opts))

          if Enum.map(terms, &json.encode!(&1, opts)) != texts do
            raise "#{inspect(json)} writes other text than McpFramer.JSON for #{name}, #{label}"
          end

          bytes = Enum.reduce(texts, 0, &(byte_size(&1) + &2))
          encode = fn version -> &version.encode!(&1, opts) end
          run = fn version -> {Bench.Encoding.run(encode.(version), terms), :same} end
          times = interleave([json, McpFramer.JSON], run, rounds)
          print_row("encode, #{label}: " <> name, bytes, times[json], times[McpFramer.JSON])
        end
      end
    end
  end

  # Whether REV takes the options `call` gives it.
  defp takes?(call) do
    call.()
    true
  rescue
    ArgumentError -> false
  end

  defp decoding(module) do
    feed = fn framer, chunk ->
      case module.feed(framer, chunk) do
        {:ok, items, framer} -> {items, framer}
        {:error, :message_too_large, items, framer} -> {items, framer}
      end
    end

    {fn -> module.new(decode: :json) end, feed}
  end

  defp print_row(name, bytes, then_times, now_times) do
    {then_best, then_median} = stats(then_times)
    {now_best, now_median} = stats(now_times)

    IO.puts(
      "| #{name} | #{round(Bench.mb_per_s(bytes, then_best))} | " <>
        "#{round(Bench.mb_per_s(bytes, now_best))} | #{Bench.ratio(then_best / now_best)} | " <>
        "#{Bench.ratio(then_median / now_median)} |"
    )
  end

  # Odd rounds run the versions in one order, even rounds in the other.
  # `run` gives a version's time and what it made of the chunks, which
  # must be the same for both.
  defp interleave(modules, run, rounds) do
    {times, _count} =
      Enum.reduce(1..rounds, {%{}, nil}, fn round, acc ->
        order = if rem(round, 2) == 1, do: modules, else: Enum.reverse(modules)

        Enum.reduce(order, acc, fn module, {times, count} ->
          {micros, framed} = run.(module)

          if count not in [nil, framed] do
            raise "#{inspect(module)} made #{inspect(framed)} of the chunks, the other version #{inspect(count)}"
          end

          {Map.update(times, module, [micros], &[micros | &1]), framed}
        end)
      end)

    times
  end

  defp rounds!(text) do
    case Integer.parse(text) do
      {rounds, ""} when rounds > 0 -> rounds
      _ -> raise ArgumentError, "ROUNDS must be a positive integer, got: #{inspect(text)}"
    end
  end

  defp stats(times) do
    sorted = Enum.sort(times)
    {hd(sorted), Enum.at(sorted, div(length(sorted), 2))}
  end

  # Exports REV, renames its modules, builds its NIF and loads its modules;
  # returns Rev.McpFramer. A build is reused while the revision, this file,
  # OTP and Elixir are the same.
  defp build(rev) do
    sha = sha!(rev)
    recipe = [File.read!(__ENV__.file), System.otp_release(), System.version()]
    dir = Path.join([@root, "_build", "compare", "#{sha}-#{:erlang.phash2(recipe)}"])
    ebin = Path.join(dir, "ebin")

    unless File.exists?(Path.join(ebin, ".done")) do
      export(sha, Path.join(dir, "src"))
      rename(Path.join(dir, "src"), Path.join(dir, "priv"))
      build_nif(Path.join(dir, "src"), Path.join([dir, "priv", "native"]))
      compile(Path.join(dir, "src"), ebin)
      File.write!(Path.join(ebin, ".done"), sha)
    end

    Code.prepend_path(ebin)
    Code.ensure_loaded!(Rev.McpFramer.Native)
    Code.ensure_loaded!(Rev.McpFramer)
  end

  defp export(sha, src) do
    File.rm_rf!(src)
    File.mkdir_p!(src)
    tar = Path.join(src, "rev.tar")
    git!(["archive", "--output", tar, sha])

    case System.cmd("tar", ["-xf", tar, "-C", src], stderr_to_stdout: true) do
      {_, 0} -> File.rm!(tar)
      {output, status} -> raise "tar exited with #{status}:\n#{output}"
    end
  end

  # Renames McpFramer to Rev.McpFramer in the Elixir sources and in the
  # module names the NIF crate spells out, and points the NIF loader at
  # this revision's own library.
  defp rename(src, priv) do
    for file <- Path.wildcard(Path.join(src, "lib/**/*.ex")) do
      text = File.read!(file) |> String.replace(~r/\bMcpFramer\b/, "Rev.McpFramer")
      text = String.replace(text, ":code.priv_dir(:mcp_framer)", inspect(priv))
      File.write!(file, text)
    end

    native_ex = Path.join(src, "lib/mcp_framer/native.ex")

    unless File.read!(native_ex) =~ inspect(priv) do
      raise "#{native_ex} does not load its NIF from :code.priv_dir(:mcp_framer)"
    end

    for file <- Path.wildcard(Path.join(src, "native/*/src/**/*.rs")) do
      text = File.read!(file)
      File.write!(file, String.replace(text, "\"Elixir.McpFramer", "\"Elixir.Rev.McpFramer"))
    end
  end

  # Each build has a target directory of its own, so that two comparisons
  # at once cannot take each other's library.
  defp build_nif(src, native) do
    target = Path.join(Path.dirname(src), "target")
    args = ["build", "--release", "--locked", "--package", "mcp_framer_nif"]
    env = [{"CARGO_TARGET_DIR", target}]

    case System.cmd("cargo", args, cd: src, env: env, stderr_to_stdout: true) do
      {_, 0} -> :ok
      {output, status} -> raise "cargo exited with #{status}:\n#{output}"
    end

    File.mkdir_p!(native)

    File.cp!(
      Path.join([target, "release", "libmcp_framer_nif.so"]),
      Path.join(native, "libmcp_framer_nif.so")
    )
  end

  # The library's modules, not its Mix task, compiled by elixirc: in this
  # VM, whose protocols are consolidated, Rev.McpFramer's Inspect
  # implementation would draw a warning.
  defp compile(src, ebin) do
    File.rm_rf!(ebin)
    File.mkdir_p!(ebin)

    files =
      [
        Path.join(src, "lib/mcp_framer.ex")
        | Path.wildcard(Path.join(src, "lib/mcp_framer/**/*.ex"))
      ]
      |> Enum.map(&Path.relative_to(&1, src))

    case System.cmd("elixirc", ["-o", ebin | files], cd: src, stderr_to_stdout: true) do
      {_, 0} -> :ok
      {output, status} -> raise "elixirc exited with #{status}:\n#{output}"
    end
  end

  defp sha!(rev) do
    case System.cmd("git", ["rev-parse", "--verify", "--quiet", rev <> "^{commit}"], cd: @root) do
      {sha, 0} -> String.trim(sha)
      _ -> raise ArgumentError, "REV=#{rev} is not a commit of this repository"
    end
  end

  defp git!(args) do
    case System.cmd("git", args, cd: @root, stderr_to_stdout: true) do
      {output, 0} -> output
      {output, _} -> raise "git #{Enum.join(args, " ")}: #{output}"
    end
  end
end

case System.get_env("REV", "") do
  "" -> IO.puts(:stderr, "usage: make compare REV=<git revision>")
  rev -> Bench.Compare.main(rev)
end
