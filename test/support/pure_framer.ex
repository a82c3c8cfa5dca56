defmodule McpFramer.PureFramer do
  @moduledoc false
  # The strongest pure-Elixir framer of the same rules we know how to write:
  # each chunk is searched once with :binary.matches/2, with the pattern
  # compiled once per framer (compiling it on every call cost 70 of the
  # 240 ns that a 16-byte chunk took), the held partial is iodata joined
  # once when its message completes, and a line inside one chunk is a
  # sub-binary. It is the benchmark's baseline and the oracle of the
  # differential tests.

  defstruct held: [],
            held_size: 0,
            held_ends_in_cr: false,
            discarding: false,
            cap: 8_388_608,
            newline: nil

  def new(opts \\ []) do
    %__MODULE__{
      cap: Keyword.get(opts, :max_message_bytes, 8_388_608),
      newline: :binary.compile_pattern("\n")
    }
  end

  def buffered_bytes(%__MODULE__{held_size: size}), do: size

  def feed(%__MODULE__{} = state, chunk) when is_binary(chunk) do
    {messages, oversize, state} =
      case :binary.matches(chunk, state.newline) do
        [] ->
          tail(state, chunk, 0, [], 0)

        [{newline, 1} | newlines] ->
          {acc, oversize, state} = first_line(state, chunk, newline)
          lines(newlines, chunk, newline + 1, state, acc, oversize)
      end

    if oversize == 0,
      do: {:ok, messages, state},
      else: {:error, :message_too_large, messages, state}
  end

  defp first_line(%{discarding: true} = state, _chunk, _newline) do
    {[], 0, %{state | discarding: false}}
  end

  defp first_line(%{held_size: 0} = state, chunk, newline) do
    {acc, oversize} = inside(chunk, 0, newline, state.cap, [], 0)
    {acc, oversize, state}
  end

  defp first_line(state, chunk, newline) do
    {held, held_size, stop} =
      cond do
        newline == 0 and state.held_ends_in_cr ->
          {state.held, state.held_size - 1, 0}

        newline > 0 and :binary.at(chunk, newline - 1) == ?\r ->
          {state.held, state.held_size, newline - 1}

        true ->
          {state.held, state.held_size, newline}
      end

    size = held_size + stop
    state = %{state | held: [], held_size: 0}

    cond do
      size > state.cap ->
        {[], 1, state}

      size == 0 ->
        {[], 0, state}

      stop == 0 ->
        joined = IO.iodata_to_binary(held)
        {[binary_part(joined, 0, held_size)], 0, state}

      true ->
        {[IO.iodata_to_binary([held | binary_part(chunk, 0, stop)])], 0, state}
    end
  end

  defp lines([{newline, 1} | newlines], chunk, start, state, acc, oversize) do
    {acc, oversize} = inside(chunk, start, newline, state.cap, acc, oversize)
    lines(newlines, chunk, newline + 1, state, acc, oversize)
  end

  defp lines([], chunk, start, state, acc, oversize) do
    tail(%{state | held: [], held_size: 0}, chunk, start, acc, oversize)
  end

  defp inside(chunk, start, newline, cap, acc, oversize) do
    stop =
      if newline > start and :binary.at(chunk, newline - 1) == ?\r,
        do: newline - 1,
        else: newline

    size = stop - start

    cond do
      size > cap -> {acc, oversize + 1}
      size == 0 -> {acc, oversize}
      true -> {[binary_part(chunk, start, size) | acc], oversize}
    end
  end

  defp tail(%{discarding: true} = state, _chunk, _start, acc, oversize) do
    {:lists.reverse(acc), oversize, state}
  end

  defp tail(state, chunk, start, acc, oversize) when start == byte_size(chunk) do
    {:lists.reverse(acc), oversize, state}
  end

  defp tail(state, chunk, start, acc, oversize) do
    size = byte_size(chunk) - start
    held_size = state.held_size + size
    ends_in_cr = :binary.last(chunk) == ?\r
    minimum = if ends_in_cr, do: held_size - 1, else: held_size

    if minimum > state.cap do
      state = %{state | held: [], held_size: 0, discarding: true}
      {:lists.reverse(acc), oversize + 1, state}
    else
      held = [state.held | binary_part(chunk, start, size)]
      state = %{state | held: held, held_size: held_size, held_ends_in_cr: ends_in_cr}
      {:lists.reverse(acc), oversize, state}
    end
  end
end
