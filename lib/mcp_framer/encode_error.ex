defmodule McpFramer.EncodeError do
  @moduledoc """
  A term that `McpFramer.JSON.encode/2` cannot write as JSON, as
  `Jason.encode/2` refuses it. `reason` says why and `value` holds the
  culprit:

    * `:invalid_byte` - `value` is a string that is not valid UTF-8, and
      `byte` the first byte of its first invalid sequence;
    * `:duplicate_key` - under `maps: :strict`, `value` is the text of a
      key written twice in one map, escaped;
    * `:struct` - `value` is a struct other than `Date`, `Time`,
      `NaiveDateTime` and `DateTime`;
    * `:unsupported` - `value` is a tuple, pid, port, reference, function
      or bitstring;
    * `:invalid_key` - `value` is a map key that is not a binary, atom or
      integer, and that `String.Chars` does not turn into a string;
    * `:improper_list` - `value` is the tail of an improper list;
    * `:no_memory` - `value` is how many bytes of text were written when
      the output could not grow, or the size of the text laid out for
      `pretty:` that could not be allocated: the text was to be at least
      that long.

  The messages of the first two are Jason's. As in Jason's
  `EncodeError`, whose only field it is, `message` holds the message too,
  so that a match on it such as `%{message: message}` goes on working,
  and `raise McpFramer.EncodeError, "text"` raises with that message.
  """
  defexception [:reason, :value, :byte, :message]

  @type t :: %__MODULE__{
          reason:
            :invalid_byte
            | :duplicate_key
            | :struct
            | :unsupported
            | :invalid_key
            | :improper_list
            | :no_memory,
          value: term(),
          byte: byte() | nil,
          message: String.t() | nil
        }

  @impl true
  def exception({:invalid_byte, byte, string}),
    do: with_message(%__MODULE__{reason: :invalid_byte, value: string, byte: byte})

  def exception({reason, value}), do: with_message(%__MODULE__{reason: reason, value: value})
  def exception(fields) when is_list(fields), do: with_message(struct!(__MODULE__, fields))
  # As `raise Jason.EncodeError, "..."` takes it.
  def exception(message) when is_binary(message), do: %__MODULE__{message: message}

  defp with_message(error), do: %{error | message: message(error)}

  # The message given, or else made from the other fields.
  @impl true
  def message(%__MODULE__{message: message}) when is_binary(message), do: message
  def message(error), do: describe(error)

  defp describe(%__MODULE__{reason: :invalid_byte, value: string, byte: byte}) do
    "invalid byte #{inspect(byte, base: :hex)} in #{inspect(string)}"
  end

  defp describe(%__MODULE__{reason: :duplicate_key, value: key}), do: "duplicate key: #{key}"

  defp describe(%__MODULE__{reason: :struct, value: %module{}}) do
    "cannot encode a %#{inspect(module)}{} struct as JSON: McpFramer.JSON encodes the " <>
      "Date, Time, NaiveDateTime and DateTime structs and no others (it does not use " <>
      "the Jason.Encoder protocol). Turn it into a map of the fields to send first, " <>
      "for example with Map.take/2, or Map.from_struct/1 for all of them"
  end

  defp describe(%__MODULE__{reason: :unsupported, value: value}) when is_bitstring(value) do
    "cannot encode a bitstring as JSON: #{inspect(value)}"
  end

  defp describe(%__MODULE__{reason: :unsupported, value: value}) do
    "cannot encode #{inspect(value)} as JSON: only maps, lists, binaries, numbers, " <>
      "atoms and the Date, Time, NaiveDateTime and DateTime structs have a JSON form"
  end

  defp describe(%__MODULE__{reason: :invalid_key, value: key}) do
    "cannot encode the map key #{inspect(key)} as JSON: a key must be a binary, an atom, " <>
      "an integer or a term String.Chars turns into a string"
  end

  defp describe(%__MODULE__{reason: :improper_list, value: tail}) do
    "cannot encode an improper list as JSON: its tail is #{inspect(tail)}"
  end

  defp describe(%__MODULE__{reason: :no_memory, value: bytes}) do
    "could not allocate memory for a JSON text of at least #{inspect(bytes)} bytes"
  end

  defp describe(%__MODULE__{reason: reason, value: value}) do
    "cannot encode #{inspect(value)} as JSON (#{inspect(reason)})"
  end
end
