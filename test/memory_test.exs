defmodule McpFramer.MemoryTest do
  # Memory is read from :erlang.memory(:binary), which counts NIF resources
  # and the held buffers as well as ordinary binaries. Not async, so no other
  # test allocates binaries meanwhile.
  use ExUnit.Case, async: false

  @kib 1024
  @mib 1024 * 1024
  @chunk :binary.copy("x", 64 * @kib)

  test "held memory never exceeds the cap plus one chunk" do
    cap = 4 * @mib
    framer = McpFramer.new(max_message_bytes: cap)
    before = settled_binary_memory()

    # Grow a partial message to cap - 1 bytes, one chunk at a time. Each
    # chunk is a new binary, as a Port's are.
    {framer, peak} =
      Enum.reduce(1..div(cap, byte_size(@chunk)), {framer, 0}, fn n, {framer, peak} ->
        size = if n == div(cap, byte_size(@chunk)), do: 65_535, else: 65_536
        {:ok, [], framer} = McpFramer.feed(framer, :binary.copy("x", size))
        {framer, max(peak, binary_memory() - before)}
      end)

    assert McpFramer.buffered_bytes(framer) == cap - 1
    assert peak > div(cap, 2), "the held bytes were not counted: peak #{peak}"
    assert peak <= cap + byte_size(@chunk), "held #{peak} bytes for a cap of #{cap}"

    # The line goes over the cap: its bytes are let go at once.
    {:error, :message_too_large, [], framer} = McpFramer.feed(framer, "yy")
    assert McpFramer.buffered_bytes(framer) == 0
    # The chunks this test made are garbage now; collect them.
    :erlang.garbage_collect()
    assert binary_memory() - before < 64 * @kib
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

  defp feed_any(framer, chunk) do
    case McpFramer.feed(framer, chunk) do
      {:ok, [], framer} -> framer
      {:error, :message_too_large, [], framer} -> framer
    end
  end

  defp binary_memory, do: :erlang.memory(:binary)

  # Binaries of earlier tests may still be on their way back to the
  # allocator (it frees blocks of other threads later); wait until the
  # figure holds still, so that their release is not read as ours.
  defp settled_binary_memory(last \\ binary_memory(), tries \\ 40) do
    Process.sleep(50)
    now = binary_memory()

    if abs(now - last) < 64 * @kib or tries == 0,
      do: now,
      else: settled_binary_memory(now, tries - 1)
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
