defmodule McpFramer.IntegrationTest do
  # Real MCP servers over real pipes: the bundled example server and the
  # official reference server, @modelcontextprotocol/server-everything, which
  # test/mcp_server/setup.sh installs.
  use ExUnit.Case, async: true

  alias McpFramer.TestSession, as: Session

  @kib 1024
  @everything Path.expand(
                "mcp_server/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
                __DIR__
              )

  describe "the bundled example server" do
    setup do
      session = Session.start("elixir", [Path.expand("../examples/mcp_server.exs", __DIR__)])
      on_exit(fn -> Session.stop(session) end)
      %{session: session, echo: :binary.copy("e", 1024 * @kib)}
    end

    test "frames CRLF and blank-line output, a 3 MiB notification and a 1 MiB echo", c do
      send_example_requests(c.session, c.echo)
      session = Session.await(c.session, [1, 2, 3, 4])

      assert session.answers[1]["result"]["serverInfo"]["name"] == "mcp_framer_example"
      assert [%{"name" => "echo"}] = session.answers[2]["result"]["tools"]
      assert echo_text(session.answers[3]) == "Echo: " <> c.echo
      assert session.answers[4]["result"] == %{}
      assert [%{"params" => %{"data" => log}}] = session.notifications
      assert byte_size(log) == 3 * 1024 * @kib
      assert session.discards == 0
    end

    test "with a 256 KiB cap, the 3 MiB log and the 1 MiB echo are discarded; later answers arrive",
         c do
      session = %{c.session | framer: McpFramer.new(max_message_bytes: 256 * @kib)}
      send_example_requests(session, c.echo)
      session = Session.await(session, [1, 2, 4], 2)

      assert session.discards == 2
      refute Map.has_key?(session.answers, 3)
      assert session.notifications == []
      assert session.answers[4]["result"] == %{}
    end

    test "text past ASCII comes back as it was sent", c do
      text = "é 😀 \u2028"
      send_opening(c.session)
      Session.send_line(c.session, call(3, "echo", ~s({"message":"#{text}"})))
      session = Session.await(c.session, [1, 2, 3])

      assert echo_text(session.answers[3]) == "Echo: " <> text
    end

    defp send_example_requests(session, echo) do
      send_opening(session)
      Session.send_line(session, call(3, "echo", ~s({"message":"#{echo}"})))
      Session.send_line(session, ~s({"jsonrpc":"2.0","id":4,"method":"ping"}))
    end
  end

  describe "@modelcontextprotocol/server-everything" do
    if !(System.find_executable("node") && File.exists?(@everything)) and
         System.get_env("CI") != "true" do
      @missing "node or server-everything missing: run test/mcp_server/setup.sh"
      IO.puts(:stderr, "skipping the server-everything integration tests: #{@missing}")
      @describetag skip: @missing
    end

    setup do
      unless System.find_executable("node") && File.exists?(@everything) do
        flunk("server-everything is not installed: run test/mcp_server/setup.sh")
      end

      session = Session.start("node", [@everything, "stdio"])
      on_exit(fn -> Session.stop(session) end)
      %{session: session, echo: :binary.copy("e", 1024 * @kib)}
    end

    test "answers initialize, tools/list, a 1 MiB echo and get-sum, each by its id", c do
      send_everything_requests(c.session, c.echo)
      session = Session.await(c.session, [1, 2, 3, 4])

      assert session.answers[1]["result"]["serverInfo"]["name"] =~ "everything"
      tools = for tool <- session.answers[2]["result"]["tools"], do: tool["name"]
      assert "echo" in tools and "get-sum" in tools
      assert echo_text(session.answers[3]) == "Echo: " <> c.echo
      assert echo_text(session.answers[4]) == "The sum of 2 and 3 is 5."
      assert session.chunks > 16, "a 1 MiB answer should arrive in many chunks"
      assert session.discards == 0
    end

    test "with a 256 KiB cap the 1 MiB echo answer is discarded; later answers arrive framed",
         c do
      session = %{c.session | framer: McpFramer.new(max_message_bytes: 256 * @kib)}
      send_everything_requests(session, c.echo)
      session = Session.await(session, [1, 2, 4], 1)

      assert session.discards == 1
      refute Map.has_key?(session.answers, 3)
      assert echo_text(session.answers[4]) == "The sum of 2 and 3 is 5."
    end

    defp send_everything_requests(session, echo) do
      send_opening(session)
      Session.send_line(session, call(3, "echo", ~s({"message":"#{echo}"})))
      Session.send_line(session, call(4, "get-sum", ~s({"a":2,"b":3})))
    end
  end

  # initialize (id 1), the initialized notification and tools/list (id 2).
  defp send_opening(session) do
    Session.send_line(session, initialize(1))
    Session.send_line(session, ~s({"jsonrpc":"2.0","method":"notifications/initialized"}))
    Session.send_line(session, ~s({"jsonrpc":"2.0","id":2,"method":"tools/list"}))
  end

  defp initialize(id) do
    ~s({"jsonrpc":"2.0","id":#{id},"method":"initialize","params":{"protocolVersion":"2025-06-18",) <>
      ~s("capabilities":{},"clientInfo":{"name":"mcp_framer_test","version":"0.1.0"}}})
  end

  defp call(id, tool, arguments) do
    ~s({"jsonrpc":"2.0","id":#{id},"method":"tools/call","params":{"name":"#{tool}","arguments":#{arguments}}})
  end

  defp echo_text(%{"result" => %{"content" => [%{"type" => "text", "text" => text}]}}), do: text
end
