defmodule McpFramer.TestJSON do
  @moduledoc false
  # The test oracle for McpFramer.JSON: `decode/1` returns what Jason 1.4.5's
  # `Jason.decode/1` returns with its default options, for every input.
  # Jason cannot be installed on the development machine, so its rules are
  # written out here, errors included:
  #
  #   * `{:error, %{position: p, token: nil}}` when the input ends early
  #     (p is its length) or the byte at p cannot be there;
  #   * `{:error, %{position: p, token: t}}` when t, the bytes from p, is a
  #     well-formed token with no value: an integer over 1,024 characters, a
  #     float that overflows, a `\u` escape that is not hex, or a lone
  #     surrogate.
  #
  # Where Jason reports an error somewhere other than at the first offending
  # byte, the function that does so says why. Nesting is kept on an explicit
  # stack, so depth costs heap, never native stack.
  #
  # `decode/2` takes Jason's `keys:` option as Jason 1.4.5 does (a key
  # function included, and what it throws caught as Jason catches it), and the
  # limits of McpFramer.JSON: `max_depth`, `max_values` and
  # `duplicate_keys: :error`. A document past a limit is
  #
  #   * `{:error, %{position: p, token: nil, limit: option, limit_value: v}}`
  #     where p is the first byte of the value past `max_values`, the bracket
  #     that opens a level past `max_depth`, or the quote of a key that
  #     repeats in its object (compared decoded);
  #   * and the same with `limit: :keys` at a key's quote for a key that
  #     cannot become an atom, where Jason raises: what a framer gives.
  #
  # Limits are checked as each value begins, and keys converted as Jason
  # converts them, once their pair is complete: at the `,` or `}` after the
  # value. The options and the counts are kept in the process dictionary
  # for the call, so that the grammar's functions stay Jason's.

  @type error :: %{
          required(:position) => non_neg_integer(),
          required(:token) => nil | binary(),
          optional(:limit) => atom(),
          optional(:limit_value) => term()
        }

  @options {__MODULE__, :options}
  @counts {__MODULE__, :counts}

  @spec decode(binary(), keyword()) :: {:ok, term()} | {:error, error()}
  def decode(input, opts \\ []) when is_binary(input) do
    Process.put(@options, Map.new(opts))
    Process.put(@counts, %{values: 0, depth: 0})
    {:ok, value(input, 0, input, [])}
  catch
    {__MODULE__, position, token} ->
      {:error, %{position: position, token: token}}

    {__MODULE__, position, limit, value} ->
      {:error, %{position: position, token: nil, limit: limit, limit_value: value}}

    # Jason's own throws, which its `try` catches from a key function too.
    {:position, position} ->
      {:error, %{position: position, token: nil}}

    {:token, token, position} ->
      {:error, %{position: position, token: token}}
  after
    Process.delete(@options)
    Process.delete(@counts)
  end

  # For the integration tests: a message that decodes is whole.
  @spec decode!(binary()) :: term()
  def decode!(input) do
    case decode(input) do
      {:ok, value} ->
        value

      {:error, %{position: position, token: token}} ->
        raise ArgumentError,
              "invalid JSON at byte #{position} (token #{inspect(token)}) in " <>
                inspect(input, limit: 20, printable_limit: 200)
    end
  end

  # Each state function takes the unread input, its offset in the whole
  # input, the whole input (to slice tokens from), and the stack of open
  # containers: {:array, items} and {:object, pairs, key}, newest first.

  @whitespace [?\s, ?\t, ?\r, ?\n]

  defp value(<<byte, rest::binary>>, at, input, stack) when byte in @whitespace,
    do: value(rest, at + 1, input, stack)

  # A byte that can begin a value begins one, within the limits.
  defp value(<<byte, _::binary>> = rest, at, input, stack) when byte in ~c'[{"-0123456789tfn' do
    begin_value(at, byte in ~c'[{')
    start(rest, at, input, stack)
  end

  defp value(_rest, at, _input, _stack), do: fail(at)

  defp start(<<?[, rest::binary>>, at, input, stack) do
    case skip(rest, at + 1) do
      {<<?], rest::binary>>, at} -> close(rest, at + 1, input, stack, [])
      {rest, at} -> value(rest, at, input, open([{:array, []} | stack]))
    end
  end

  defp start(<<?{, rest::binary>>, at, input, stack) do
    case skip(rest, at + 1) do
      {<<?}, rest::binary>>, at} -> close(rest, at + 1, input, stack, %{})
      {rest, at} -> key(rest, at, input, open([{:object, []} | stack]))
    end
  end

  defp start(<<?", rest::binary>>, at, input, stack) do
    {string, rest, at} = string(rest, at + 1, input)
    close(rest, at, input, stack, string)
  end

  defp start(<<byte, _::binary>> = rest, at, input, stack) when byte == ?- or byte in ?0..?9 do
    {number, rest, at} = number(rest, at, input)
    close(rest, at, input, stack, number)
  end

  defp start(<<"true", rest::binary>>, at, input, stack),
    do: close(rest, at + 4, input, stack, true)

  defp start(<<"false", rest::binary>>, at, input, stack),
    do: close(rest, at + 5, input, stack, false)

  defp start(<<"null", rest::binary>>, at, input, stack),
    do: close(rest, at + 4, input, stack, nil)

  # A misspelt or cut-off literal (`tru`, `nul x`) is reported at its first
  # byte, even when the input ends inside it.
  defp start(_rest, at, _input, _stack), do: fail(at)

  # The limits, as each value begins at `at`: one value more, and one level
  # deeper for an array or object.
  defp begin_value(at, nests?) do
    options = Process.get(@options)
    %{values: values, depth: depth} = counts = Process.get(@counts)
    values = values + 1
    Process.put(@counts, %{counts | values: values})

    case options do
      %{max_values: max} when values > max -> fail_limit(at, :max_values, max)
      %{max_depth: max} when nests? and depth >= max -> fail_limit(at, :max_depth, max)
      _ -> :ok
    end
  end

  # A container opens, or closes: the depth the limits see.
  defp open(stack) do
    Process.put(@counts, Map.update!(Process.get(@counts), :depth, &(&1 + 1)))
    stack
  end

  defp closed(stack) do
    Process.put(@counts, Map.update!(Process.get(@counts), :depth, &(&1 - 1)))
    stack
  end

  # A value is complete: it goes into the innermost open container, which
  # then expects a comma or its closing bracket.
  defp close(rest, at, _input, [], value) do
    case skip(rest, at) do
      {<<>>, _at} -> value
      {_rest, at} -> fail(at)
    end
  end

  defp close(rest, at, input, [{:array, items} | stack], value) do
    case skip(rest, at) do
      {<<?,, rest::binary>>, at} ->
        value(rest, at + 1, input, [{:array, [value | items]} | stack])

      {<<?], rest::binary>>, at} ->
        close(rest, at + 1, input, closed(stack), Enum.reverse(items, [value]))

      {_rest, at} ->
        fail(at)
    end
  end

  # The pair is complete at its comma or brace: only then does Jason
  # convert its key.
  defp close(rest, at, input, [{:object, pairs, key, key_at} | stack], value) do
    case skip(rest, at) do
      {<<?,, rest::binary>>, at} ->
        pairs = [{key, convert(key, key_at), value} | pairs]
        {rest, at} = skip(rest, at + 1)
        key(rest, at, input, [{:object, pairs} | stack])

      # The pairs are newest first and :maps.from_list/1 keeps the last of
      # a repeated key: so the first occurrence in the input wins.
      {<<?}, rest::binary>>, at} ->
        pairs = [{key, convert(key, key_at), value} | pairs]
        map = :maps.from_list(for {_key, converted, value} <- pairs, do: {converted, value})
        close(rest, at + 1, input, closed(stack), map)

      {_rest, at} ->
        fail(at)
    end
  end

  # A key, whitespace already skipped, then its colon. Under
  # `duplicate_keys: :error` it must not repeat an earlier key of its
  # object, compared as text before conversion.
  defp key(<<?", rest::binary>>, key_at, input, [{:object, pairs} | stack]) do
    {key, rest, at} = string(rest, key_at + 1, input)

    if Process.get(@options)[:duplicate_keys] == :error and
         Enum.any?(pairs, fn {earlier, _converted, _value} -> earlier == key end) do
      fail_limit(key_at, :duplicate_keys, :error)
    end

    case skip(rest, at) do
      {<<?:, rest::binary>>, at} ->
        value(rest, at + 1, input, [{:object, pairs, key, key_at} | stack])

      {_rest, at} ->
        fail(at)
    end
  end

  defp key(_rest, at, _input, _stack), do: fail(at)

  # What a key becomes, as Jason's `keys:` option makes it. Where Jason
  # raises, a framer gives an error at the key.
  defp convert(key, key_at) do
    case Process.get(@options)[:keys] do
      nil ->
        key

      :strings ->
        key

      # An atom may have 255 characters, code points, not graphemes.
      :atoms ->
        if length(String.to_charlist(key)) > 255,
          do: fail_limit(key_at, :keys, :atoms),
          else: String.to_atom(key)

      :atoms! ->
        existing_atom(key, key_at)

      fun when is_function(fun, 1) ->
        fun.(key)
    end
  end

  defp existing_atom(key, key_at) do
    String.to_existing_atom(key)
  rescue
    ArgumentError -> fail_limit(key_at, :keys, :atoms!)
  end

  defp skip(<<byte, rest::binary>>, at) when byte in @whitespace, do: skip(rest, at + 1)
  defp skip(rest, at), do: {rest, at}

  # Strings: `at` is just past the opening quote. Text without escapes is
  # a slice of the input; with escapes, iodata of slices and decoded bytes.

  defp string(rest, at, input) do
    case plain(rest, at) do
      {<<?", rest::binary>>, stop} ->
        {binary_part(input, at, stop - at), rest, stop + 1}

      {<<?\\, rest::binary>>, stop} ->
        escape(rest, stop, input, binary_part(input, at, stop - at))

      {_rest, stop} ->
        fail(stop)
    end
  end

  defp string(rest, at, input, acc) do
    case plain(rest, at) do
      {<<?", rest::binary>>, stop} ->
        {IO.iodata_to_binary([acc | binary_part(input, at, stop - at)]), rest, stop + 1}

      {<<?\\, rest::binary>>, stop} ->
        escape(rest, stop, input, [acc | binary_part(input, at, stop - at)])

      {_rest, stop} ->
        fail(stop)
    end
  end

  # The run of text that needs no decoding: ASCII from space up, minus the
  # quote and the backslash, and well-formed UTF-8 (which excludes encoded
  # surrogates and overlong forms). It stops at whatever else comes first:
  # a quote, a backslash, a control byte, a bad UTF-8 byte or the end. All
  # but the first two are errors there.
  defp plain(<<byte, rest::binary>>, at)
       when byte in 0x20..0x7F and byte != ?" and byte != ?\\,
       do: plain(rest, at + 1)

  defp plain(<<char::utf8, rest::binary>>, at) when char >= 0x80,
    do: plain(rest, at + utf8_size(char))

  defp plain(rest, at), do: {rest, at}

  defp utf8_size(char) when char < 0x800, do: 2
  defp utf8_size(char) when char < 0x10000, do: 3
  defp utf8_size(_char), do: 4

  @escapes %{
    ?" => ?",
    ?\\ => ?\\,
    ?/ => ?/,
    ?b => ?\b,
    ?f => ?\f,
    ?n => ?\n,
    ?r => ?\r,
    ?t => ?\t
  }

  # `at` is the position of the backslash.
  defp escape(<<letter, rest::binary>>, at, input, acc) when is_map_key(@escapes, letter),
    do: string(rest, at + 2, input, [acc, Map.fetch!(@escapes, letter)])

  defp escape(<<?u, rest::binary>>, at, input, acc), do: unicode_escape(rest, at, input, acc)
  # Jason's table of escape letters ends at `u`: a byte past it is blamed on
  # the backslash, one up to it on itself.
  defp escape(<<letter, _::binary>>, at, _input, _acc) when letter <= ?u, do: fail(at + 1)
  defp escape(<<_letter, _::binary>>, at, _input, _acc), do: fail(at)
  # A string cut off right after a backslash is blamed on the backslash.
  defp escape(<<>>, at, _input, _acc), do: fail(at)

  # Jason takes the four bytes after `\u` before looking at any of them, so
  # a short escape is blamed on its backslash; then the escape is the token
  # if any of them is not hex, or it is a low surrogate.
  defp unicode_escape(
         <<first::binary-size(2), last::binary-size(2), rest::binary>>,
         at,
         input,
         acc
       ) do
    case {hex(first), hex(last)} do
      {{:ok, first}, {:ok, last}} when first in 0xD8..0xDB ->
        low_surrogate(rest, at, input, acc, first * 256 + last)

      {{:ok, first}, {:ok, last}} when first not in 0xDC..0xDF ->
        string(rest, at + 6, input, [acc | <<first * 256 + last::utf8>>])

      _ ->
        fail_token(input, at, 6)
    end
  end

  defp unicode_escape(_rest, at, _input, _acc), do: fail(at)

  # A high surrogate at `at` needs a low one right after it. If none
  # follows, the error is where it should begin; if its last two digits are
  # not hex, the low escape is the token; otherwise, if it is not a low
  # surrogate, the pair is.
  defp low_surrogate(rest, at, input, acc, high) do
    case rest do
      <<"\\u", first::binary-size(2), last::binary-size(2), rest::binary>> ->
        case {hex(first), hex(last)} do
          {_first, :error} ->
            fail_token(input, at + 6, 6)

          {{:ok, first}, {:ok, last}} when first in 0xDC..0xDF ->
            code = 0x10000 + (high - 0xD800) * 1024 + (first * 256 + last - 0xDC00)
            string(rest, at + 12, input, [acc | <<code::utf8>>])

          _ ->
            fail_token(input, at, 12)
        end

      _ ->
        fail(at + 6)
    end
  end

  defp hex(<<a, b>>) do
    case {hex_digit(a), hex_digit(b)} do
      {nil, _} -> :error
      {_, nil} -> :error
      {a, b} -> {:ok, a * 16 + b}
    end
  end

  defp hex_digit(byte) when byte in ?0..?9, do: byte - ?0
  defp hex_digit(byte) when byte in ?a..?f, do: byte - ?a + 10
  defp hex_digit(byte) when byte in ?A..?F, do: byte - ?A + 10
  defp hex_digit(_byte), do: nil

  # Jason 1.4.1 and later refuse an integer whose text, sign included, is
  # longer than this, as a token at its first byte; a float's digits are
  # not limited.
  @integer_max_chars 1024

  # Numbers: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, nothing looser.
  # Where a digit is missing, the error is at the byte found instead. What
  # follows the longest match (`01` leaves `1`) is the caller's to reject.
  defp number(rest, start, input) do
    {rest, at} = sign(rest, start)

    {rest, at} =
      case rest do
        <<?0, rest::binary>> -> {rest, at + 1}
        <<digit, _::binary>> when digit in ?1..?9 -> digits(rest, at)
        _ -> fail(at)
      end

    integer_end = at
    {rest, at, fraction?} = fraction(rest, at)
    {rest, at, exponent?} = exponent(rest, at)
    token = binary_part(input, start, at - start)

    value =
      cond do
        fraction? -> float(token, start)
        exponent? -> float(integer_exponent(input, start, integer_end, at), token, start)
        byte_size(token) > @integer_max_chars -> throw({__MODULE__, start, token})
        true -> String.to_integer(token)
      end

    {value, rest, at}
  end

  defp sign(<<?-, rest::binary>>, at), do: {rest, at + 1}
  defp sign(rest, at), do: {rest, at}

  defp fraction(<<?., rest::binary>>, at) do
    {rest, at} = required_digits(rest, at + 1)
    {rest, at, true}
  end

  defp fraction(rest, at), do: {rest, at, false}

  defp exponent(<<e, rest::binary>>, at) when e in [?e, ?E] do
    {rest, at} =
      case rest do
        <<sign, rest::binary>> when sign in [?+, ?-] -> required_digits(rest, at + 2)
        rest -> required_digits(rest, at + 1)
      end

    {rest, at, true}
  end

  defp exponent(rest, at), do: {rest, at, false}

  defp required_digits(<<digit, _::binary>> = rest, at) when digit in ?0..?9, do: digits(rest, at)
  defp required_digits(_rest, at), do: fail(at)

  defp digits(<<digit, rest::binary>>, at) when digit in ?0..?9, do: digits(rest, at + 1)
  defp digits(rest, at), do: {rest, at}

  # `1e5` has no fraction, which :erlang.binary_to_float/1 requires, so
  # Jason parses "1.0e5" instead. For an integer part of 0 it writes "0"
  # whatever the sign: `-0e5` gives 0.0, where `-0.0e5` gives -0.0.
  defp integer_exponent(input, start, integer_end, stop) do
    integer = binary_part(input, start, integer_end - start)
    integer = if integer == "-0", do: "0", else: integer
    exponent = binary_part(input, integer_end + 1, stop - integer_end - 1)
    integer <> ".0e" <> exponent
  end

  defp float(token, at), do: float(token, token, at)

  # Overflow is binary_to_float's only failure on this grammar; underflow
  # gives 0.0.
  defp float(text, token, at) do
    :erlang.binary_to_float(text)
  rescue
    ArgumentError -> throw({__MODULE__, at, token})
  end

  defp fail(at), do: throw({__MODULE__, at, nil})

  defp fail_limit(at, limit, value), do: throw({__MODULE__, at, limit, value})

  defp fail_token(input, at, length), do: throw({__MODULE__, at, binary_part(input, at, length)})
end
