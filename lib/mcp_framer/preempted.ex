defmodule McpFramer.Preempted do
  @moduledoc false
  # List and map building over terms of any size, a step of Erlang code
  # per item, so that it is preempted as any code is. The BIFs that do the
  # same count too few reductions for their time on large lists, or never
  # yield: measured on this project's traffic, `++` counted 38 reductions
  # for 2,048 items (16-32 ms joining the 683 calls' items of a 4 MiB chunk
  # of `{}`), `:lists.reverse/1` yielded only every 3-6 ms on 400,000 to
  # two million items, and `:maps.from_list/1` never yields (9-14 ms on
  # 250,000 pairs).

  # The most pairs given to `:maps.from_list/1` in one call.
  @in_one_go 10_000

  @doc "The most pairs a map is made of in one call."
  def pairs_in_one_go, do: @in_one_go

  @doc "`items ++ tail`."
  def prepend([item | items], tail), do: [item | prepend(items, tail)]
  def prepend([], tail), do: tail

  @doc "`:lists.reverse(items, tail)`."
  def reverse([item | items], tail), do: reverse(items, [item | tail])
  def reverse([], tail), do: tail

  @doc """
  `:maps.from_list(pairs)`, given `count`, the number of pairs (a guard's
  `length/1` would walk them without yielding): the last of a repeated
  key wins. Over #{@in_one_go} pairs, the map is made a pair at a time.
  """
  def from_list(pairs, count) when count <= @in_one_go, do: :maps.from_list(pairs)
  def from_list(pairs, _count), do: Enum.reduce(pairs, %{}, &put/2)

  defp put({key, value}, map), do: Map.put(map, key, value)
end
