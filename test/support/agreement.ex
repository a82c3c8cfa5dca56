defmodule McpFramer.Agreement do
  @moduledoc false
  # Whether McpFramer.JSON, or a decoding framer's item, agrees with the
  # oracle (McpFramer.TestJSON): the same term, floats bit for bit, or the
  # same error, or the same exception where Jason raises.

  alias McpFramer.{DecodeError, JSON, TestJSON}

  # McpFramer.JSON.decode/2's result, or what it raised.
  def decoded(input, opts) do
    JSON.decode(input, opts)
  rescue
    error in [ArgumentError, SystemLimitError] -> {:raised, error.__struct__}
  end

  # The oracle's result for McpFramer.JSON: where a framer's item is an
  # error for a key that cannot become an atom, Jason raises what
  # String.to_existing_atom/1 or (for a key too long) String.to_atom/1 does.
  def oracle(input, opts) do
    case TestJSON.decode(input, decode_options(opts)) do
      {:error, %{limit: :keys, limit_value: :atoms!}} -> {:raised, ArgumentError}
      {:error, %{limit: :keys, limit_value: :atoms}} -> {:raised, SystemLimitError}
      result -> result
    end
  end

  # The oracle's result shaped as McpFramer.JSON.decode/2's: an error is a
  # DecodeError holding the input as its data, and where Jason raises for
  # a key, the oracle's error at the key stands.
  def oracle_result(input, opts) do
    case TestJSON.decode(input, opts) do
      {:ok, term} -> {:ok, term}
      {:error, error} -> {:error, struct!(DecodeError, Map.put(error, :data, input))}
    end
  end

  # The options of the oracle's, of those a decoder is given.
  def decode_options(opts), do: Keyword.drop(opts, [:strings, :max_message_bytes])

  # Whether a decoder's result is the oracle's for `input`: the same term,
  # or an error at the same position with the same token and limit.
  def agrees?(_input, {:ok, term}, {:ok, expected}), do: same?(term, expected)

  def agrees?(input, {:error, %DecodeError{} = error}, {:error, expected}) do
    {error.position, error.token, error.limit, error.limit_value, error.data} ==
      {expected.position, expected.token, expected[:limit], expected[:limit_value], input}
  end

  def agrees?(_input, {:raised, module}, {:raised, module}), do: true
  def agrees?(_input, _result, _expected), do: false

  # Identical terms. Floats are compared bit for bit; a map must have
  # exactly the expected keys, which also catches a map with a repeated key.
  def same?(a, b) when is_float(a) and is_float(b), do: <<a::float>> == <<b::float>>

  def same?(a, b) when is_list(a) and is_list(b),
    do: length(a) == length(b) and Enum.all?(Enum.zip(a, b), fn {x, y} -> same?(x, y) end)

  def same?(a, b) when is_map(a) and is_map(b) do
    map_size(a) == map_size(b) and Enum.sort(Map.keys(a)) === Enum.sort(Map.keys(b)) and
      Enum.all?(b, fn {key, value} -> same?(Map.fetch!(a, key), value) end)
  end

  def same?(a, b), do: a === b
end
