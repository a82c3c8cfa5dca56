# Frames and decodes the stdout of an MCP stdio server with McpFramer.
#
#     mix run examples/demo.exs                     # the bundled example server
#     mix run examples/demo.exs npx -y @modelcontextprotocol/server-everything
#
# It starts the server through a Port in :stream mode (chunks arrive split at
# arbitrary points), sends initialize, tools/list and a tools/call of "echo"
# with a 2 MiB message. The framer decodes each message (decode: :json); the
# demo prints one line per message, its id or method read from the decoded
# term, and a summary.

defmodule Demo do
  @cap 2_621_440
  @echo_bytes 2 * 1024 * 1024
  @timeout 60_000

  def main(argv) do
    [command | args] = if argv == [], do: default_server(), else: argv
    executable = System.find_executable(command) || raise "server command not found: #{command}"
    IO.puts("server: #{Enum.join([command | args], " ")}")
    IO.puts("max_message_bytes: #{@cap}\n")

    port =
      Port.open({:spawn_executable, executable}, [:binary, :stream, :exit_status, args: args])

    for request <- requests(), do: Port.command(port, request <> "\n")

    stats = %{messages: 0, chunks: 0, discards: 0, bytes: 0, native_us: 0}

    stats =
      receive_until_answered(
        port,
        McpFramer.new(max_message_bytes: @cap, decode: :json),
        [1, 2, 3],
        stats
      )

    Port.close(port)

    mb_per_s = stats.bytes / max(stats.native_us, 1)

    IO.puts(
      "\nmessages: #{stats.messages}, chunks: #{stats.chunks}, discards: #{stats.discards}, " <>
        "bytes: #{stats.bytes}, framing and decoding: #{Float.round(mb_per_s, 1)} MB/s"
    )
  end

  defp default_server do
    ["elixir", Path.join(__DIR__, "mcp_server.exs")]
  end

  defp requests do
    echo = :binary.copy("m", @echo_bytes)

    [
      ~s({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",) <>
        ~s("capabilities":{},"clientInfo":{"name":"mcp_framer_demo","version":"0.1.0"}}}),
      ~s({"jsonrpc":"2.0","method":"notifications/initialized"}),
      ~s({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
      ~s({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo",) <>
        ~s("arguments":{"message":"#{echo}"}}})
    ]
  end

  defp receive_until_answered(_port, _framer, [], stats), do: stats

  defp receive_until_answered(port, framer, waiting, stats) do
    receive do
      {^port, {:data, chunk}} ->
        {micros, result} = :timer.tc(McpFramer, :feed, [framer, chunk])
        stats = %{stats | chunks: stats.chunks + 1, bytes: stats.bytes + byte_size(chunk)}
        stats = %{stats | native_us: stats.native_us + micros}

        {messages, framer, stats} =
          case result do
            {:ok, messages, framer} ->
              {messages, framer, stats}

            {:error, :message_too_large, messages, framer} ->
              IO.puts("discarded a line over #{@cap} bytes")
              {messages, framer, %{stats | discards: stats.discards + 1}}
          end

        ids = Enum.map(messages, &report/1)
        stats = %{stats | messages: stats.messages + length(messages)}
        receive_until_answered(port, framer, waiting -- ids, stats)

      {^port, {:exit_status, status}} ->
        IO.puts("server exited with status #{status} before answering ids #{inspect(waiting)}")
        stats
    after
      @timeout -> raise "no answer for ids #{inspect(waiting)} after #{@timeout} ms"
    end
  end

  # Prints what the decoded message is; returns its id, if it has one.
  defp report({:ok, %{"id" => id} = message}) do
    IO.puts("response      id #{inspect(id)}  #{summary(message)}")
    id
  end

  defp report({:ok, %{"method" => method}}) do
    IO.puts("notification  #{method}")
    nil
  end

  defp report({:ok, other}) do
    IO.puts("not JSON-RPC  #{inspect(other, limit: 3)}")
    nil
  end

  defp report({:error, %McpFramer.DecodeError{} = error}) do
    IO.puts("not JSON      #{Exception.message(error)}")
    nil
  end

  defp summary(%{"result" => %{"tools" => tools}}), do: "#{length(tools)} tools"

  defp summary(%{"result" => %{"content" => [%{"text" => text} | _]}}),
    do: "text of #{byte_size(text)} bytes"

  defp summary(%{"result" => %{"serverInfo" => %{"name" => name}}}), do: "server #{name}"
  defp summary(%{"error" => %{"message" => message}}), do: "error: #{message}"
  defp summary(_message), do: ""
end

Demo.main(System.argv())
