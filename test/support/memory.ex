defmodule McpFramer.Memory do
  @moduledoc false
  # What a binary keeps alive, as the VM counts it, without
  # :binary.referenced_byte_size/1: on OTP 27.3.4.1 that returns the size
  # of a binary on the process heap (64 bytes or fewer) in bits.
  #
  # A binary over 64 bytes lives off the process heaps and is shared: a
  # process that holds any slice of it lists all of it, once, in
  # Process.info(pid, :binary). A binary that lists nothing lives on the
  # heap and is copied with every message: it keeps alive its own bytes.

  def kept_alive(binary) when is_binary(binary) do
    parent = self()

    holder =
      spawn_link(fn ->
        {:binary, shared} = Process.info(self(), :binary)
        send(parent, {self(), shared, byte_size(binary)})
      end)

    receive do
      {^holder, [], own} ->
        own

      {^holder, shared, _own} ->
        shared |> Enum.map(fn {_id, size, _refs} -> size end) |> Enum.sum()
    end
  end
end
