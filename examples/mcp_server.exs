# A small MCP stdio server with no dependencies, for `make demo` and the
# integration tests. It reads JSON-RPC requests, one per line, and answers
# them in the ways real servers do that make framing hard:
#
#   * initialize is answered with a CRLF line ending (as Windows servers do);
#   * tools/list is preceded by blank lines;
#   * tools/call "echo" is preceded by a 3 MiB log notification, and its
#     answer repeats the (possibly large) text it was sent.
#
# Requests are read with regexes rather than a JSON parser: this server only
# has to understand the requests in examples/demo.exs and test/.

defmodule ExampleServer do
  def run do
    :ok = :io.setopts(:standard_io, binary: true)

    IO.stream(:stdio, :line)
    |> Enum.each(&answer/1)
  end

  defp answer(line) do
    id = capture(line, ~r/"id"\s*:\s*(\d+)/)

    case capture(line, ~r/"method"\s*:\s*"([^"]+)"/) do
      "initialize" ->
        write(
          ~s({"jsonrpc":"2.0","id":#{id},"result":{"protocolVersion":"2025-06-18",) <>
            ~s("capabilities":{"tools":{}},"serverInfo":{"name":"mcp_framer_example","version":"0.1.0"}}}\r\n)
        )

      "tools/list" ->
        write("\n\r\n")

        write(
          ~s({"jsonrpc":"2.0","id":#{id},"result":{"tools":[{"name":"echo",) <>
            ~s("description":"Echoes back the message","inputSchema":{"type":"object",) <>
            ~s("properties":{"message":{"type":"string"}},"required":["message"]}}]}}\n)
        )

      "tools/call" ->
        log = :binary.copy("x", 3 * 1024 * 1024)

        write(
          ~s({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"debug","data":"#{log}"}}\n)
        )

        message = capture(line, ~r/"message"\s*:\s*"([^"]*)"/) || ""

        write(
          ~s({"jsonrpc":"2.0","id":#{id},"result":{"content":[{"type":"text","text":"Echo: #{message}"}]}}\n)
        )

      "ping" ->
        write(~s({"jsonrpc":"2.0","id":#{id},"result":{}}\n))

      _notification_or_unknown when id == nil ->
        :ok

      _unknown ->
        write(
          ~s({"jsonrpc":"2.0","id":#{id},"error":{"code":-32601,"message":"Method not found"}}\n)
        )
    end
  end

  defp capture(line, regex) do
    case Regex.run(regex, line, capture: :all_but_first) do
      [value] -> value
      nil -> nil
    end
  end

  # Standard I/O is in unicode mode under `elixir` and `mix run`: IO.write
  # writes UTF-8 text as it is, where IO.binwrite would encode each byte
  # past ASCII again, as a character of its own.
  defp write(data), do: IO.write(:stdio, data)
end

ExampleServer.run()
