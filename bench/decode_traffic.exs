defmodule Bench.DecodeTraffic do
  # MCP traffic for the decoding rows: the messages a server's stdout
  # carries, as valid JSON of the shapes clients decode. Messages are built
  # from the process's :rand state, so a row seeded with Bench.Traffic.seed/1
  # is the same on every run; every message is distinct (its own id, its
  # own slice of text or bytes, its own schema), and sizes vary.

  import Bitwise
  alias Bench.Traffic, as: T

  @kib 1024

  # Text already escaped for a JSON string: plain words, and the escapes and
  # non-ASCII that tool output carries (newlines, tabs, quotes, Windows
  # paths, accents raw and as \u escapes, CJK, emoji raw and as surrogate
  # pairs). No token holds a lone backslash or a control byte, and a space
  # only ever falls between tokens or inside one's plain text, so the text
  # can be cut at any space.
  @words ~w(the file server tool result value request index query search
    path build module config error cache token user session line output
    input stream chunk message schema record field table report commit
    branch update delete create parse render fetch write read open close
    list item page count limit offset status and of to in for with on
    from by is at as an it this that not be or)
  @specials [
    ~S(\n),
    ~S(\n\n),
    ~S(\t),
    ~S(\"quoted\"),
    ~S(C:\\Users\\dev\\src\\main.rs),
    ~S(caf\u00e9),
    "café",
    "naïve",
    "Ünïcödé",
    "日本語のテキスト",
    "Привет, мир",
    "😀",
    ~S(\ud83d\ude80),
    ~S(\u2014),
    "—",
    ~S(\/api\/v1\/items),
    ~S(done\r\n),
    ~S({\"key\": [1, 2.5, true, null]}),
    ~S|def area(r):\n    return 3.14159 * r ** 2\n|,
    ~S(<div class=\"row\">\u003c\/div\u003e)
  ]

  @names ~w(path query limit offset recursive pattern encoding timeout
    include exclude format depth branch message author labels priority
    state title body url method headers retries verbose dry_run)

  def word, do: pick(@words)

  defp pick(list), do: Enum.at(list, :rand.uniform(length(list)) - 1)

  # About 4 MiB of escaped text, three words in four plain.
  def pool do
    words = List.to_tuple(@words)
    specials = List.to_tuple(@specials)

    Stream.repeatedly(fn ->
      if :rand.uniform(4) == 1,
        do: elem(specials, :rand.uniform(tuple_size(specials)) - 1),
        else: elem(words, :rand.uniform(tuple_size(words)) - 1)
    end)
    |> Enum.take(600_000)
    |> Enum.join(" ")
  end

  # The pool as .NET's System.Text.Json and Python's json.dumps write it by
  # default: every character past ASCII as a \u escape, those past the
  # BMP as surrogate pairs.
  def ascii(pool) do
    for <<char::utf8 <- pool>>, into: "" do
      cond do
        char < 0x80 ->
          <<char>>

        char < 0x10000 ->
          unicode_escape(char)

        true ->
          unicode_escape(0xD7C0 + (char >>> 10)) <> unicode_escape(0xDC00 + (char &&& 0x3FF))
      end
    end
  end

  defp unicode_escape(unit),
    do: "\\u" <> String.pad_leading(String.downcase(Integer.to_string(unit, 16)), 4, "0")

  # Random bytes to draw base64 payloads from.
  def noise, do: :rand.bytes(2 * 1024 * @kib)

  # A slice of the pool of about `size` bytes, cut at spaces.
  def slice(pool, size) do
    from = :rand.uniform(byte_size(pool) - size - 4 * @kib)
    {start, 1} = :binary.match(pool, " ", scope: {from, byte_size(pool) - from})
    {stop, 1} = :binary.match(pool, " ", scope: {start + size, byte_size(pool) - start - size})
    binary_part(pool, start + 1, stop - start - 1)
  end

  # Lines made by `message.(id)` up to `total` bytes; every seventh ends in
  # CRLF, as Bench.Traffic.stream/4 does.
  def stream(total, message) do
    Stream.iterate(1, &(&1 + 1))
    |> Enum.reduce_while({[], 0}, fn id, {lines, bytes} ->
      if bytes >= total do
        {:halt, lines}
      else
        line = [message.(id) | if(rem(id, 7) == 0, do: "\r\n", else: "\n")]
        {:cont, {[line | lines], bytes + IO.iodata_length(line)}}
      end
    end)
    |> Enum.reverse()
  end

  # ~150 B.
  def progress(pool, id) do
    token =
      if :rand.uniform(2) == 1,
        do: [?", "req-", Integer.to_string(:rand.uniform(99_999)), ?"],
        else: Integer.to_string(:rand.uniform(1_000_000))

    total = T.between(10, 100_000).()
    done = :rand.uniform(total)

    progress =
      if :rand.uniform(4) == 1,
        do: :erlang.float_to_binary(done / total * 100, decimals: 2),
        else: Integer.to_string(done)

    [
      ~s({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":),
      token,
      ~s(,"progress":),
      progress,
      ~s(,"total":),
      Integer.to_string(total),
      ~s(,"message":"),
      slice(pool, T.between(2, 20).()),
      " step ",
      Integer.to_string(id),
      ~s("}})
    ]
  end

  # A tool result of one or two text items, `size` bytes in all.
  def text_result(pool, id, size) do
    head = ~s({"jsonrpc":"2.0","id":#{id},"result":{"content":[)
    tail = ~s(],"isError":false}})
    body = max(size - byte_size(head) - byte_size(tail) - 50, 8)

    items =
      if body > 4 * @kib and :rand.uniform(5) == 1,
        do: [text_item(pool, div(body, 3)), ?,, text_item(pool, body - div(body, 3))],
        else: text_item(pool, body)

    [head, items, tail]
  end

  defp text_item(pool, size), do: [~s({"type":"text","text":"), slice(pool, size), ~s("})]

  # An image, or now and then an embedded resource, of `size` bytes of base64.
  def blob_result(noise, id, size) do
    from = :rand.uniform(byte_size(noise) - size)
    data = Base.encode64(binary_part(noise, from, div(size, 4) * 3))

    item =
      if :rand.uniform(4) == 1,
        do: [
          ~s({"type":"resource","resource":{"uri":"file:///srv/reports/r#{id}.pdf",),
          ~s("mimeType":"application/pdf","blob":"),
          data,
          ~s("}})
        ],
        else: [~s({"type":"image","data":"), data, ~s(","mimeType":"image/png"})]

    [~s({"jsonrpc":"2.0","id":#{id},"result":{"content":[), item, "]}}"]
  end

  # A tools/list result: 4 to 40 tools, each with a JSON schema of 1 to 8
  # properties of every kind, some nested.
  def tools_list(pool, id) do
    tools = for _ <- 1..T.between(4, 40).(), do: tool(pool)
    [~s({"jsonrpc":"2.0","id":#{id},"result":{"tools":[), Enum.intersperse(tools, ?,), "]}}"]
  end

  # A tools/list result of `size` bytes or a little more: tools until then.
  def tools_list(pool, id, size) do
    tools =
      Stream.repeatedly(fn -> IO.iodata_to_binary(tool(pool)) end)
      |> Stream.transform(0, fn tool, bytes ->
        if bytes < size, do: {[tool], bytes + byte_size(tool) + 1}, else: {:halt, bytes}
      end)
      |> Enum.intersperse(?,)

    [~s({"jsonrpc":"2.0","id":#{id},"result":{"tools":[), tools, "]}}"]
  end

  defp tool(pool) do
    annotations =
      if :rand.uniform(2) == 1,
        do: ~s(,"annotations":{"readOnlyHint":#{:rand.uniform(2) == 1},"openWorldHint":false}),
        else: ""

    [
      ~s({"name":"#{word()}_#{word()}","description":"),
      slice(pool, T.between(40, 400).()),
      ~s(","inputSchema":),
      object_schema(pool, T.between(1, 8).(), 1),
      annotations,
      "}"
    ]
  end

  defp object_schema(pool, count, depth) do
    names = Enum.take_random(@names, count)
    required = Enum.take_random(names, :rand.uniform(count))
    properties = for name <- names, do: [?", name, ~s(":), property(pool, depth)]

    [
      ~s({"type":"object","properties":{),
      Enum.intersperse(properties, ?,),
      ~s(},"required":[),
      Enum.map_intersperse(required, ?,, &[?", &1, ?"]),
      ~s(],"additionalProperties":false})
    ]
  end

  defp property(pool, depth) do
    description = [~s("description":"), slice(pool, T.between(20, 160).()), ?"]

    case :rand.uniform(if depth > 0, do: 8, else: 7) do
      1 ->
        [~s({"type":"string",), description, ~s(,"minLength":1,"pattern":"^[a-z0-9_\\\\-]+$"})]

      2 ->
        [~s({"type":"string","format":"uri",), description, "}"]

      3 ->
        maximum = :rand.uniform(10_000)

        [
          ~s({"type":"integer",),
          description,
          ~s(,"minimum":0,"maximum":#{maximum},"default":#{:rand.uniform(maximum)}})
        ]

      4 ->
        default = :erlang.float_to_binary(:rand.uniform(), decimals: 3)
        [~s({"type":"number",), description, ~s(,"default":#{default},"exclusiveMinimum":0})]

      5 ->
        values = Enum.map_intersperse(Enum.take_random(@words, 5), ?,, &[?", &1, ?"])
        [~s({"type":"string","enum":[), values, "],", description, "}"]

      6 ->
        [~s({"type":"array","items":{"type":"string"},"minItems":1,), description, "}"]

      7 ->
        [~s({"anyOf":[{"type":"boolean"},{"type":"null"}],"default":null,), description, "}"]

      8 ->
        object_schema(pool, T.between(1, 4).(), depth - 1)
    end
  end

  # A small message of ~200-400 B: a log line, a tool call, a short result.
  def small(pool, id) do
    case :rand.uniform(3) do
      1 ->
        [
          ~s({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info",),
          ~s("logger":"#{word()}","data":"),
          slice(pool, T.between(90, 270).()),
          ~s("}})
        ]

      2 ->
        [
          ~s({"jsonrpc":"2.0","id":#{id},"method":"tools/call","params":{"name":"#{word()}_#{word()}",),
          ~s("arguments":{"path":"/srv/#{word()}/#{word()}.json","limit":#{:rand.uniform(500)},),
          ~s("recursive":#{:rand.uniform(2) == 1},"query":"),
          slice(pool, T.between(60, 240).()),
          ~s("}}})
        ]

      3 ->
        text_result(pool, id, T.between(200, 400).())
    end
  end

  # A session's mix by count: mostly progress and small messages, text
  # results of kilobytes, some tools/list results, now and then a blob,
  # which carries most of the bytes.
  def mixed(pool, noise, id) do
    case :rand.uniform(100) do
      n when n <= 55 -> progress(pool, id)
      n when n <= 70 -> small(pool, id)
      n when n <= 92 -> text_result(pool, id, T.between(1 * @kib, 30 * @kib).())
      n when n <= 97 -> tools_list(pool, id)
      _ -> blob_result(noise, id, T.between(50 * @kib, 550 * @kib).())
    end
  end
end
