defmodule McpFramer.JSONDocuments do
  @moduledoc false
  # Random JSON for the differential tests and the soak: MCP messages and
  # generic documents, valid and not, lines and streams of them cut as a
  # Port cuts them, and decoding options. Everything is drawn from the
  # process's :rand state, so a seeded case is the same on every run.

  import Bitwise

  alias McpFramer.Chunks

  @kib 1024
  @mib 1024 * 1024

  # The keys the generators use, as atoms, so that keys: :atoms! takes
  # them; keys of random text stay unknown and are refused.
  @known_keys ~w(a b x é k1 jsonrpc id method params result error code message data
    content type text isError tools name description inputSchema properties required
    arguments echo object string number boolean progress progressToken total image
    mimeType)

  def make_known_atoms do
    for key <- @known_keys ++ Enum.map(1..70, &"k#{&1}"), do: String.to_atom(key)
  end

  # Random decoding options: limits often generous enough to pass, key
  # options on keys most of which exist as atoms (see make_known_atoms/0),
  # and copied strings now and then.
  def random_options do
    [
      max_depth: Enum.random([nil, 1, 2, 3, 5, 100]),
      max_values: Enum.random([nil, 1, 3, 10, 50, 1000]),
      duplicate_keys: Enum.random([nil, :first, :error]),
      keys: Enum.random([nil, :strings, :atoms!, :atoms!, :atoms]),
      strings: Enum.random([nil, :reference, :copy])
    ]
    |> Enum.reject(fn {_name, value} -> value == nil end)
    |> Enum.shuffle()
  end

  # Documents. A generator returns iodata; `any_document/0` mixes every
  # kind, valid and not.

  def any_document do
    case :rand.uniform(20) do
      n when n <= 6 -> document(:rand.uniform(5))
      n when n <= 10 -> mcp_message()
      n when n <= 12 -> truncated(document(3))
      n when n <= 15 -> mutated(small_document())
      n when n <= 17 -> token_soup()
      n when n <= 19 -> bad_utf8_document()
      20 -> :rand.bytes(:rand.uniform(40))
    end
  end

  def small_document do
    case :rand.uniform(3) do
      1 -> mcp_message(:small)
      _ -> document(:rand.uniform(3))
    end
  end

  # The input as a decoder may be given it: a binary of its own, or a
  # slice of a larger one, at a byte or (rarely for a NIF) a bit offset.
  def placed(iodata) do
    input = IO.iodata_to_binary(iodata)

    case :rand.uniform(6) do
      1 ->
        binary_part(<<0, input::binary, :rand.bytes(70)::binary>>, 1, byte_size(input))

      2 ->
        <<_::3, slice::binary>> = <<0::3, input::binary>>
        slice

      _ ->
        input
    end
  end

  # Valid JSON: a random value, whitespace between any tokens.
  def document(depth), do: render(value(depth))

  # A value is a tree: {:array, items}, {:object, [{key, value}]} or
  # {:raw, iodata} for a scalar already written out.
  def value(depth) do
    case :rand.uniform(if depth > 0, do: 12, else: 8) do
      1 -> {:raw, Enum.random(["null", "true", "false"])}
      n when n in 2..4 -> {:raw, number()}
      n when n in 5..8 -> {:raw, string_literal(text())}
      n when n in 9..10 -> {:array, for(_ <- 1..(:rand.uniform(8) - 1)//1, do: value(depth - 1))}
      n when n in 11..12 -> object(depth - 1)
    end
  end

  def object(depth) do
    case :rand.uniform(8) do
      1 -> {:object, []}
      # Past 32 pairs a map is a hash map; repeated keys, the first wins.
      2 -> {:object, for(_ <- 1..(32 + :rand.uniform(30)), do: {key(40), value(0)})}
      _ -> {:object, for(_ <- 1..:rand.uniform(6), do: {key(8), value(depth)})}
    end
  end

  # Keys from a small pool, so some repeat, sometimes written with escapes
  # that decode to the same key.
  def key(pool) do
    case :rand.uniform(10) do
      1 -> string_literal(text())
      2 -> Enum.random([~S("\u0061"), ~S("\u0062"), ~S("k\u0031"), ~S("\u00e9")])
      3 -> Enum.random([~s("a"), ~s("b"), ~s("k1"), ~s("é")])
      _ -> ~s("k#{:rand.uniform(pool)}")
    end
  end

  def render({:raw, iodata}), do: [ws(), iodata, ws()]
  def render({:array, []}), do: [ws(), "[", ws(), "]", ws()]

  def render({:array, items}),
    do: [ws(), "[", Enum.intersperse(Enum.map(items, &render/1), ","), "]", ws()]

  def render({:object, []}), do: [ws(), "{", ws(), "}", ws()]

  def render({:object, pairs}) do
    pairs = for {key, value} <- pairs, do: [ws(), key, ws(), ":", render(value)]
    [ws(), "{", Enum.intersperse(pairs, ","), "}", ws()]
  end

  # Mostly none; otherwise a run of JSON's four whitespace bytes.
  def ws do
    case :rand.uniform(6) do
      1 -> for _ <- 1..:rand.uniform(3), do: Enum.random([" ", "\t", "\r", "\n"])
      _ -> ""
    end
  end

  # Around 64 bits, and past them.
  @edge_integers ~w(0 -0 9223372036854775807 -9223372036854775808 9223372036854775808
                    -9223372036854775809 18446744073709551615 18446744073709551616)

  # Rounding edges, the largest and smallest doubles, overflow, underflow.
  @edge_floats ~w(-0.0 0.0 0e0 1E2 1e-400 -1.5e-400 1e400 -1e400 1.7976931348623157e308
                  1.7976931348623158e308 1.7976931348623159e308 2.2250738585072011e-308
                  2.2250738585072014e-308 4.9e-324 2.4703282292062328e-324
                  2.4703282292062327e-324 9007199254740993.0 0.1 1e-99999999999999999999
                  1e99999999999999999999 123456789012345678901234567890.5e-10)

  def number do
    case :rand.uniform(11) do
      1 -> Integer.to_string(:rand.uniform(200) - 100)
      2 -> Integer.to_string(:rand.uniform(1 <<< 62) * Enum.random([1, -1]))
      3 -> Enum.random(@edge_integers)
      4 -> [Enum.random(["", "-"]), ?1 + :rand.uniform(9) - 1, digits(18 + :rand.uniform(60))]
      5 -> Float.to_string((:rand.uniform() - 0.5) * :math.pow(10, :rand.uniform(40) - 20))
      n when n in 6..7 -> float_text()
      8 -> Enum.random(@edge_floats)
      9 -> [Integer.to_string(:rand.uniform(99)), Enum.random(["e", "E"]), exponent()]
      10 -> ["-0", Enum.random(["e", "E", ".0e", ".0E"]), exponent()]
      11 -> ["0.", digits(:rand.uniform(20))]
    end
  end

  # -?(0|[1-9]digits)(.digits)?([eE][+-]?digits)? with at least one of the
  # fraction and the exponent, often near a rounding boundary: 17 to 25
  # significant digits.
  def float_text do
    integer =
      if :rand.uniform(3) == 1,
        do: "0",
        else: [Integer.to_string(:rand.uniform(9)), digits(:rand.uniform(12) - 1)]

    fraction = if :rand.uniform(4) > 1, do: [".", digits(:rand.uniform(25))], else: []

    exponent =
      if fraction == [] or :rand.uniform(2) == 1,
        do: [Enum.random(["e", "E"]), exponent()],
        else: []

    [Enum.random(["", "-"]), integer, fraction, exponent]
  end

  def exponent do
    sign = Enum.random(["", "+", "-"])

    case :rand.uniform(4) do
      1 -> [sign, digits(:rand.uniform(4))]
      2 -> [sign, Integer.to_string(:rand.uniform(330))]
      3 -> [sign, "00", Integer.to_string(:rand.uniform(9))]
      4 -> [sign, Integer.to_string(300 + :rand.uniform(30))]
    end
  end

  def digits(count), do: for(_ <- 1..count//1, do: ?0 + :rand.uniform(10) - 1)

  # Text as Elixir strings, written as JSON by string_literal/1.
  def text do
    case :rand.uniform(8) do
      1 -> ""
      # Long: about 64 bytes and more, where strings may be sub-binaries.
      2 -> plain_text(60 + :rand.uniform(200))
      3 -> text(60 + :rand.uniform(200))
      _ -> Enum.map_join(1..:rand.uniform(4), " ", fn _ -> word() end)
    end
  end

  # At least `size` bytes of words.
  def text(size), do: words(size, &word/0)

  # The same with no byte that must be escaped.
  def plain_text(size), do: words(size, &plain_word/0)

  def words(size, word), do: words(size, word, "")
  def words(size, _word, text) when byte_size(text) >= size, do: text
  def words(size, word, text), do: words(size, word, text <> " " <> word.())

  def plain_word do
    case :rand.uniform(5) do
      1 -> <<random_char()::utf8>>
      _ -> for _ <- 1..:rand.uniform(10), into: "", do: <<?a + :rand.uniform(26) - 1>>
    end
  end

  def word do
    case :rand.uniform(10) do
      1 -> Enum.random(["é", "€", "😀", "日本語", "Ω", "\u00a0", "\x7f", "𝄞"])
      2 -> Enum.random(["\"", "\\", "/", "\n", "\t", "\r", "\b", "\f", <<0>>, <<0x1F>>])
      3 -> <<random_char()::utf8>>
      _ -> for _ <- 1..:rand.uniform(10), into: "", do: <<?a + :rand.uniform(26) - 1>>
    end
  end

  def random_char do
    char =
      Enum.random([
        0x20 + :rand.uniform(0x5F) - 1,
        0x80 + :rand.uniform(0x780) - 1,
        0x800 + :rand.uniform(0xF800) - 1,
        0x10000 + :rand.uniform(0x100000) - 1
      ])

    if char in 0xD800..0xDFFF or char in [?", ?\\], do: 0xFFFD, else: char
  end

  # A JSON string for `text`: what must be escaped is, and now and then
  # anything else is too, as \uXXXX (a surrogate pair past the BMP, in
  # either case) or \/.
  def string_literal(text) do
    escape_rate = Enum.random([0, 0, 5, 30])
    [?", for(<<char::utf8 <- text>>, do: escape(char, escape_rate)), ?"]
  end

  def escape(?", _rate), do: ~S(\")
  def escape(?\\, _rate), do: ~S(\\)
  def escape(?\n, _rate), do: ~S(\n)
  def escape(?\t, _rate), do: ~S(\t)
  def escape(?\r, _rate), do: ~S(\r)
  def escape(?\b, _rate), do: ~S(\b)
  def escape(?\f, _rate), do: ~S(\f)
  def escape(char, _rate) when char < 0x20, do: unicode_escape(char)

  def escape(char, rate) do
    cond do
      rate == 0 or :rand.uniform(100) > rate -> <<char::utf8>>
      char == ?/ -> ~S(\/)
      char >= 0x10000 -> surrogate_pair(char)
      true -> unicode_escape(char)
    end
  end

  def unicode_escape(code) do
    hex = code |> Integer.to_string(16) |> String.pad_leading(4, "0")
    ["\\u", if(:rand.uniform(2) == 1, do: String.downcase(hex), else: hex)]
  end

  def surrogate_pair(char) do
    code = char - 0x10000
    [unicode_escape(0xD800 + (code >>> 10)), unicode_escape(0xDC00 + (code &&& 0x3FF))]
  end

  # MCP traffic: JSON-RPC requests, notifications, results and errors.

  def mcp_message(size \\ :any) do
    id =
      Enum.random([
        {:raw, Integer.to_string(:rand.uniform(10_000))},
        {:raw, ~s("req-#{:rand.uniform(99)}")}
      ])

    jsonrpc = {~s("jsonrpc"), {:raw, ~s("2.0")}}

    body =
      case :rand.uniform(if size == :small, do: 4, else: 7) do
        1 -> [{~s("method"), {:raw, ~s("notifications/progress")}}, {~s("params"), progress()}]
        2 -> [{~s("id"), id}, {~s("method"), {:raw, ~s("tools/call")}}, {~s("params"), call()}]
        3 -> [{~s("id"), id}, {~s("error"), rpc_error()}]
        4 -> [{~s("id"), id}, {~s("result"), text_result(1 + :rand.uniform(200))}]
        5 -> [{~s("id"), id}, {~s("result"), text_result(:rand.uniform(30 * @kib))}]
        6 -> [{~s("id"), id}, {~s("result"), tools_list(:rand.uniform(12))}]
        7 -> [{~s("id"), id}, {~s("result"), image_result(:rand.uniform(20 * @kib))}]
      end

    render({:object, Enum.shuffle([jsonrpc | body])})
  end

  def progress do
    {:object,
     [
       {~s("progressToken"), {:raw, string_literal("tok-#{:rand.uniform(999)}")}},
       {~s("progress"), {:raw, number()}},
       {~s("total"), {:raw, "100"}},
       {~s("message"), {:raw, string_literal(text())}}
     ]}
  end

  def call do
    arguments = for _ <- 1..:rand.uniform(4), do: {key(8), value(2)}
    {:object, [{~s("name"), {:raw, ~s("echo")}}, {~s("arguments"), {:object, arguments}}]}
  end

  def rpc_error do
    {:object,
     [
       {~s("code"), {:raw, Enum.random(["-32601", "-32602", "-32603", "-32000"])}},
       {~s("message"), {:raw, string_literal(text())}}
     ]}
  end

  # Text content with escapes and non-ASCII, about `size` bytes.
  def text_result(size) do
    content =
      {:object,
       [{~s("type"), {:raw, ~s("text")}}, {~s("text"), {:raw, string_literal(text(size))}}]}

    {:object, [{~s("content"), {:array, [content]}}, {~s("isError"), {:raw, "false"}}]}
  end

  def tools_list(count),
    do: {:object, [{~s("tools"), {:array, for(n <- 1..count, do: tool(n))}}]}

  def tool(n) do
    properties =
      for p <- 1..:rand.uniform(6) do
        type = {~s("type"), {:raw, Enum.random([~s("string"), ~s("number"), ~s("boolean")])}}
        {~s("arg#{p}"), {:object, [type, {~s("description"), {:raw, string_literal(text())}}]}}
      end

    schema =
      {:object,
       [
         {~s("type"), {:raw, ~s("object")}},
         {~s("properties"), {:object, properties}},
         {~s("required"), {:array, [{:raw, ~s("arg1")}]}}
       ]}

    {:object,
     [
       {~s("name"), {:raw, ~s("tool_#{n}")}},
       {~s("description"), {:raw, string_literal(text())}},
       {~s("inputSchema"), schema}
     ]}
  end

  # A base64 blob: one long string with no escapes.
  def image_result(size) do
    blob = {:raw, [?", Base.encode64(:rand.bytes(size)), ?"]}

    content =
      {:object,
       [
         {~s("type"), {:raw, ~s("image")}},
         {~s("data"), blob},
         {~s("mimeType"), {:raw, ~s("image/png")}}
       ]}

    {:object, [{~s("content"), {:array, [content]}}]}
  end

  # Deep nesting, as arrays or objects, sometimes left open.
  def deep_document do
    depth = Enum.random([100, 1000, 10_000, 100_000]) - :rand.uniform(50)

    {open, close} =
      case :rand.uniform(3) do
        1 -> {"[", "]"}
        2 -> {~s({"a":), "}"}
        3 -> {~s([{"k":[), "]}]"}
      end

    inner = Enum.random(["1", "[]", "{}", ~s("x"), ""])
    closes = List.duplicate(close, depth)
    closes = if :rand.uniform(4) == 1, do: Enum.drop(closes, 1), else: closes
    [List.duplicate(open, depth), inner, closes]
  end

  # Invalid documents

  # A prefix: almost every one is an unexpected end.
  def truncated(iodata) do
    document = IO.iodata_to_binary(iodata)
    binary_part(document, 0, :rand.uniform(byte_size(document) + 1) - 1)
  end

  # One to three bytes replaced, inserted or deleted.
  def mutated(iodata) do
    Enum.reduce(1..:rand.uniform(3), IO.iodata_to_binary(iodata), fn _, document ->
      at = :rand.uniform(byte_size(document) + 1) - 1
      {before, rest} = :erlang.split_binary(document, at)

      case {:rand.uniform(3), rest} do
        {1, <<_, rest::binary>>} -> <<before::binary, mutant_byte(), rest::binary>>
        {2, rest} -> <<before::binary, mutant_byte(), rest::binary>>
        {3, <<_, rest::binary>>} -> before <> rest
        {_, <<>>} -> <<before::binary, mutant_byte()>>
      end
    end)
  end

  def mutant_byte do
    case :rand.uniform(3) do
      1 ->
        :rand.uniform(256) - 1

      _ ->
        Enum.random(
          ~c"{}[],:\"\\ \t\r\nu0123456789.eE+-tfnaxl" ++ [0, 0x1F, 0x7F, 0x80, 0xC3, 0xED, 0xFF]
        )
    end
  end

  @soup ~w|{ } [ ] , : 1 - 0 01 . e E + 1.5 -0 2. 1e400 true tru null nul false NaN Infinity \\ é| ++
          ~w|" "a" "k1": "\\u "\\ud800" "\\udc00" "\\ud83d\\ude00" "\\u12" "\\u00e9" "\\x"| ++
          [<<0xFF>>, <<0xC3>>, <<0>>, "\f", "\u00a0"]

  def token_soup do
    for _ <- 1..:rand.uniform(12), do: [Enum.random(@soup), ws()]
  end

  # A valid document but for bad UTF-8 in one string (or key).
  def bad_utf8_document do
    bad = {:raw, [?", word(), bad_utf8(), word(), ?"]}

    case :rand.uniform(3) do
      1 -> render(bad)
      2 -> render({:array, [value(1), bad, value(1)]})
      3 -> render({:object, [{key(4), value(1)}, {[?", bad_utf8(), ?"], {:raw, "1"}}]})
    end
  end

  def bad_utf8 do
    Enum.random([
      <<0x80>>,
      <<0xBF>>,
      <<0xC0, 0xAF>>,
      <<0xC1, 0x81>>,
      <<0xE0, 0x80, 0x80>>,
      <<0xE2, 0x82>>,
      <<0xED, 0xA0, 0x80>>,
      <<0xED, 0xBF, 0xBF>>,
      <<0xF0, 0x80, 0x80, 0x80>>,
      <<0xF4, 0x90, 0x80, 0x80>>,
      <<0xF5, 0x80, 0x80, 0x80>>,
      <<0xFE>>,
      <<0xFF>>,
      <<0xC3>>,
      <<0xF0, 0x9F, 0x98>>
    ])
  end

  # Line streams for the framers

  # Lines, each framed by "\n" or "\r\n", blank ones included, and the
  # stream cut into chunks that are each a binary of their own. Some lines
  # are over 64 KiB; case n has one over 1 MiB when n is 1, 9, 17, ...
  def line_stream(n) do
    lines = for _ <- 1..(5 + :rand.uniform(40)), do: line()

    lines =
      lines ++ for _ <- 1..:rand.uniform(2)//1, :rand.uniform(2) == 1, do: large_line(64 * @kib)

    lines = if rem(n, 8) == 1, do: [large_line(@mib) | lines], else: lines
    lines = Enum.shuffle(lines)

    scale =
      if Enum.any?(lines, &(byte_size(&1) > @mib)),
        do: 16 * @kib,
        else: Enum.random([16, 512, 8 * @kib, 64 * @kib])

    {lines, cut(lines, scale)}
  end

  def line do
    case :rand.uniform(4) do
      1 -> single_line(mcp_message())
      _ -> small_line()
    end
  end

  def small_line do
    case :rand.uniform(12) do
      n when n <= 5 -> single_line(mcp_message(:small))
      n when n <= 7 -> single_line(document(:rand.uniform(3)))
      8 -> single_line(mutated(small_document()))
      9 -> single_line(truncated(small_document()))
      10 -> single_line(Enum.random([token_soup(), bad_utf8_document()]))
      11 -> Enum.random(["", "  ", "\t", "\r"])
      12 -> single_line(:rand.bytes(:rand.uniform(30)))
    end
  end

  # A line of `size` bytes or somewhat more: a blob, long text with
  # escapes, or a tools/list result; sometimes cut short or made invalid
  # near its end. Text and tools are one rendered piece repeated, which
  # keeps the generator cheap.
  def large_line(size) do
    line =
      case :rand.uniform(3) do
        1 ->
          blob = image_result(div(size * 3, 4) + :rand.uniform(div(size, 4)))
          render({:object, [{~s("result"), blob}]})

        2 ->
          [?", text, ?"] = string_literal(text(4 * @kib))
          [~s({"result":{"content":[{"type":"text","text":"), repeated(text, size, ""), ~s("}]}})]

        3 ->
          tools = repeated(render(tool(:rand.uniform(99))), size, ",")
          [~s({"jsonrpc":"2.0","id":7,"result":{"tools":[), tools, "]}}"]
      end

    line = single_line(line)

    case :rand.uniform(4) do
      1 -> binary_part(line, 0, byte_size(line) - :rand.uniform(10))
      2 -> mutate_near_end(line)
      _ -> line
    end
  end

  # Copies of `piece`, `separator` between them, to at least `size` bytes.
  def repeated(piece, size, separator) do
    piece = IO.iodata_to_binary(piece)
    Enum.intersperse(List.duplicate(piece, div(size, byte_size(piece)) + 1), separator)
  end

  def mutate_near_end(line) do
    at = byte_size(line) - :rand.uniform(100)
    {before, <<_, rest::binary>>} = :erlang.split_binary(line, at)
    <<before::binary, Enum.random([0x01, 0xFF, ?", ?]]), rest::binary>>
  end

  # JSON needs no newline but as whitespace, which a space replaces.
  def single_line(iodata),
    do: iodata |> IO.iodata_to_binary() |> :binary.replace("\n", " ", [:global])

  # Joins lines with "\n" or "\r\n" and cuts the stream into chunks of 1 to
  # `scale` bytes, or through the next newline, each a fresh binary.
  def cut(lines, scale) do
    stream = IO.iodata_to_binary(for line <- lines, do: [line, Enum.random(["\n", "\r\n"])])
    cut_stream(stream, scale)
  end

  # Cut anywhere, up to `scale` bytes, or now and then just after a newline.
  def cut_stream(stream, scale) do
    Chunks.cut(stream, fn rest ->
      case {:rand.uniform(8), :binary.match(rest, "\n")} do
        {1, {at, 1}} -> at + 1
        _ -> :rand.uniform(scale)
      end
    end)
  end
end
