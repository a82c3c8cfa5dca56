defmodule McpFramer.Frames do
  @moduledoc false
  # Feeds chunks that frame without an oversized line; returns every message.

  def frame(framer, chunks) do
    {messages, _framer} =
      Enum.flat_map_reduce(chunks, framer, fn chunk, framer ->
        {:ok, messages, framer} = McpFramer.feed(framer, chunk)
        {messages, framer}
      end)

    messages
  end
end
