defmodule McpFramer.TestSession do
  @moduledoc false
  # An MCP stdio server run through a Port in :stream mode, as a client runs
  # it: its stdout arrives in chunks cut wherever the pipe cut it, and
  # McpFramer turns them back into messages. Every message must decode as
  # JSON, or framing went wrong.

  alias McpFramer.TestJSON

  defstruct [:port, :framer, answers: %{}, notifications: [], discards: 0, chunks: 0]

  @timeout 60_000

  # The server's stderr is dropped so its logging does not clutter test output.
  def start(command, args, opts \\ []) do
    executable = System.find_executable(command) || raise "#{command} not found"

    port =
      Port.open({:spawn_executable, "/bin/sh"}, [
        :binary,
        :stream,
        :exit_status,
        args: ["-c", ~s(exec "$0" "$@" 2>/dev/null), executable | args]
      ])

    %__MODULE__{port: port, framer: McpFramer.new(opts)}
  end

  def send_line(%__MODULE__{port: port}, json) do
    true = Port.command(port, [json, "\n"])
    :ok
  end

  # Frames the server's output until every id in `ids` has its answer and at
  # least `discards` feeds returned the message_too_large error tuple.
  def await(session, ids, discards \\ 0) do
    if Enum.all?(ids, &Map.has_key?(session.answers, &1)) and session.discards >= discards do
      session
    else
      session |> receive_chunk() |> await(ids, discards)
    end
  end

  def stop(%__MODULE__{port: port}) do
    if Port.info(port), do: Port.close(port)
    :ok
  end

  defp receive_chunk(%__MODULE__{port: port} = session) do
    receive do
      {^port, {:data, chunk}} ->
        {messages, session} =
          case McpFramer.feed(session.framer, chunk) do
            {:ok, messages, framer} ->
              {messages, %{session | framer: framer}}

            {:error, :message_too_large, messages, framer} ->
              {messages, %{session | framer: framer, discards: session.discards + 1}}
          end

        session = %{session | chunks: session.chunks + 1}
        Enum.reduce(messages, session, &record(TestJSON.decode!(&1), &2))

      {^port, {:exit_status, status}} ->
        raise "the server exited with status #{status}; answers so far: " <>
                inspect(Map.keys(session.answers))
    after
      @timeout ->
        raise "no answer after #{@timeout} ms; answers so far: #{inspect(Map.keys(session.answers))}"
    end
  end

  defp record(%{"id" => id} = answer, session)
       when is_map_key(answer, "result") or is_map_key(answer, "error") do
    %{session | answers: Map.put(session.answers, id, answer)}
  end

  defp record(message, session) do
    %{session | notifications: session.notifications ++ [message]}
  end
end
