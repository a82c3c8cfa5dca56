defmodule McpFramer.EncodeTest do
  # One test per rule of McpFramer.JSON's encoding, named after it. The
  # expected text is written out from Jason 1.4.5's source and docs
  # (Jason.Encode): what each term becomes, each escape mode's table,
  # Map.to_list/1's order, and :erlang.float_to_binary(f, [:short]), which
  # Jason calls for floats on OTP 24 and later.
  use ExUnit.Case, async: true
  doctest McpFramer.JSON.Encoder

  import Bitwise

  alias McpFramer.{EncodeError, JSON}

  defp encode!(term, opts \\ []), do: JSON.encode!(term, opts)

  defp error(term, opts \\ []) do
    assert {:error, %EncodeError{} = error} = JSON.encode(term, opts)
    error
  end

  describe "terms" do
    test "nil, true and false are null, true and false; other atoms are strings of their name" do
      assert encode!([nil, true, false, :ok, :"with space", :é, :日本]) ==
               ~s([null,true,false,"ok","with space","é","日本"])
    end

    test "an atom's name is escaped like any string" do
      assert encode!(:"a\"b\\c\nd") == ~S("a\"b\\c\nd")
      assert encode!(:"</x>", escape: :html_safe) == ~S("\u003C\/x>")
      assert encode!(:é, escape: :unicode_safe) == ~S("\u00E9")
    end

    test "an atom's Latin-1 name is written in UTF-8, from U+0080 to U+00FF" do
      assert encode!([:"\u0080", :"\u00FF", :"a\u0080\u00FFb"]) ==
               ~s(["\u0080","\u00FF","a\u0080\u00FFb"])

      assert encode!(:"\u0080", escape: :unicode_safe) == ~S("\u0080")
    end

    test "an atom's name of any length, up to 255 characters, is written whole each time" do
      for length <- 1..255, char <- ["a", "é", "日"] do
        name = String.duplicate(char, length)
        atom = String.to_atom(name)
        assert encode!([atom, atom]) == ~s(["#{name}","#{name}"]), "#{length} of #{char}"
      end
    end

    test "integers of any size are written in decimal" do
      for integer <- [
            0,
            -1,
            42,
            (1 <<< 63) - 1,
            -(1 <<< 63),
            (1 <<< 64) - 1,
            1 <<< 64,
            -(1 <<< 64) - 1,
            10 ** 19,
            -(10 ** 19),
            10 ** 100 + 7,
            -(3 ** 2000)
          ] do
        assert encode!(integer) == Integer.to_string(integer)
      end
    end

    test "floats are written as float_to_binary(f, [:short]) writes them" do
      floats =
        [0.0, -0.0, 1.0, -1.5, 0.1, 100.0, 1000.0, 1234.0, 0.001, 0.0001, 0.00012, 1.2e-4] ++
          [1.0e15, 1.0e16, 1.0e21, 1.0e22, 123_456_789.0, 1_234_567_890.0, 12_345_678.9] ++
          [5.0e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 9_007_199_254_740_993.0] ++
          [-1.1496366673247973e15, 0.30000000000000004, 1 / 3, 2 / 3, 45.67, 3.14159]

      for float <- floats do
        assert encode!(float) == :erlang.float_to_binary(float, [:short])
      end
    end

    test "floats of every magnitude, from random bits, are written as float_to_binary does" do
      :rand.seed(:exsss, {27, 1, 1})

      # Every finite float's bits lie below those of infinity, 0x7FF0...
      for _ <- 1..20_000 do
        <<float::float>> = <<:rand.uniform(0x7FF0_0000_0000_0000) - 1::64>>
        float = if :rand.uniform(2) == 1, do: -float, else: float
        assert encode!(float) == :erlang.float_to_binary(float, [:short])
      end

      # Short decimals, the common case in MCP traffic.
      for _ <- 1..20_000 do
        float = :rand.uniform(10 ** :rand.uniform(15)) / 10 ** :rand.uniform(20)
        assert encode!(float) == :erlang.float_to_binary(float, [:short])
      end
    end

    test "the text of a float is plain when not longer than scientific, and scientific otherwise" do
      assert encode!([100.0, 1000.0, 0.0001, 0.00012, 1_234_567_890.0, 12_345_678_901.0]) ==
               "[100.0,1.0e3,0.0001,1.2e-4,1234567890.0,12345678901.0]"
    end

    test "a float of magnitude 2^53 or more is always scientific" do
      assert encode!([9_007_199_254_740_991.0, 9_007_199_254_740_992.0, -4.637715513831999e16]) ==
               "[9007199254740991.0,9.007199254740992e15,-4.637715513831999e16]"
    end

    test "lists are arrays, in order, nested to any depth" do
      assert encode!([]) == "[]"
      assert encode!([1, [2, [3, []]], "x"]) == ~s([1,[2,[3,[]]],"x"])
    end

    test "a million nested lists and maps are written without recursion" do
      depth = 1_000_000
      lists = Enum.reduce(1..depth, [], fn _, inner -> [inner] end)
      text = encode!(lists)
      assert byte_size(text) == 2 * depth + 2
      assert binary_part(text, 0, 4) == "[[[["

      maps = Enum.reduce(1..depth, 1, fn _, inner -> %{"a" => inner} end)
      text = encode!(maps)
      assert byte_size(text) == 5 * depth + 1 + depth
      assert binary_part(text, byte_size(text) - 3, 3) == "}}}"
    end

    test "maps are objects, their pairs in Map.to_list/1's order" do
      assert encode!(%{}) == "{}"
      assert encode!(%{"b" => 1, "a" => [], "c" => %{}}) == ~s({"a":[],"b":1,"c":{}})
      map = %{:b => 1, "a" => 2, 3 => 4, 1.5 => 5}
      expected = Enum.map_join(Map.to_list(map), ",", fn {k, v} -> ~s("#{k}":#{v}) end)
      assert encode!(map) == "{" <> expected <> "}"
    end

    # 32 pairs are the most the BEAM keeps in a flat map, sorted; more
    # are hashed.
    test "maps of 32 pairs and more keep Map.to_list/1's order" do
      for size <- [32, 33, 64, 1000, 50_000], keys <- [:integers, :strings, :atoms] do
        map =
          Map.new(1..size, fn i ->
            key =
              case keys do
                :integers -> i * 7919
                :strings -> "key #{i}"
                :atoms -> :"a#{rem(i, 200)}"
              end

            {key, i}
          end)

        expected = Enum.map_join(Map.to_list(map), ",", fn {k, v} -> ~s("#{k}":#{v}) end)
        assert encode!(map) == "{" <> expected <> "}", "#{size} #{keys}"
      end
    end

    test "Date, Time, NaiveDateTime and DateTime become their ISO 8601 strings" do
      assert encode!(~D[2024-01-02]) == ~s("2024-01-02")
      assert encode!(~T[03:04:05.123456]) == ~s("03:04:05.123456")
      assert encode!(~N[2024-01-02 03:04:05]) == ~s("2024-01-02T03:04:05")
      assert encode!(~U[2024-01-02 03:04:05.123Z]) == ~s("2024-01-02T03:04:05.123Z")

      paris = %DateTime{
        year: 2024,
        month: 1,
        day: 2,
        hour: 3,
        minute: 4,
        second: 5,
        microsecond: {0, 0},
        time_zone: "Europe/Paris",
        zone_abbr: "CET",
        utc_offset: 3600,
        std_offset: 0
      }

      assert encode!(%{"at" => [paris, ~D[-0001-12-31]]}) ==
               ~s({"at":["2024-01-02T03:04:05+01:00","-0001-12-31"]})
    end
  end

  describe "strings" do
    test "binaries are strings; quote and backslash are escaped with a backslash" do
      assert encode!("plain text") == ~s("plain text")
      assert encode!(~S(say "hi" \o/)) == ~S("say \"hi\" \\o/")
    end

    test "every control character is escaped: five by letter, the rest as \\u00XX in upper case" do
      named = %{0x08 => ~S(\b), 0x09 => ~S(\t), 0x0A => ~S(\n), 0x0C => ~S(\f), 0x0D => ~S(\r)}

      for mode <- [:json, :unicode_safe, :javascript_safe, :html_safe], byte <- 0..0x1F do
        hex = byte |> Integer.to_string(16) |> String.pad_leading(2, "0")
        expected = Map.get(named, byte, "\\u00" <> hex)
        assert encode!(<<?a, byte, ?b>>, escape: mode) == ~s("a#{expected}b"), "#{byte} #{mode}"
      end
    end

    # What each mode writes for each character that some mode escapes.
    @table [
      # character, :json, :javascript_safe, :html_safe, :unicode_safe
      {"\"", ~S(\"), ~S(\"), ~S(\"), ~S(\")},
      {"\\", ~S(\\), ~S(\\), ~S(\\), ~S(\\)},
      {"/", "/", "/", ~S(\/), "/"},
      {"<", "<", "<", ~S(\u003C), "<"},
      {">", ">", ">", ">", ">"},
      {"&", "&", "&", "&", "&"},
      {"'", "'", "'", "'", "'"},
      {"\x7F", "\x7F", "\x7F", "\x7F", "\x7F"},
      {"é", "é", "é", "é", ~S(\u00E9)},
      {"ÿ", "ÿ", "ÿ", "ÿ", ~S(\u00FF)},
      {"Ā", "Ā", "Ā", "Ā", ~S(\u0100)},
      {"߿", "߿", "߿", "߿", ~S(\u07FF)},
      {"ࠀ", "ࠀ", "ࠀ", "ࠀ", ~S(\u0800)},
      {"—", "—", "—", "—", ~S(\u2014)},
      {"\u2027", "\u2027", "\u2027", "\u2027", ~S(\u2027)},
      {"\u2028", "\u2028", ~S(\u2028), ~S(\u2028), ~S(\u2028)},
      {"\u2029", "\u2029", ~S(\u2029), ~S(\u2029), ~S(\u2029)},
      {"\u202A", "\u202A", "\u202A", "\u202A", ~S(\u202A)},
      {"日", "日", "日", "日", ~S(\u65E5)},
      {"\uFFFF", "\uFFFF", "\uFFFF", "\uFFFF", ~S(\uFFFF)},
      {"😀", "😀", "😀", "😀", ~S(\uD83D\uDE00)},
      {"\u{10000}", "\u{10000}", "\u{10000}", "\u{10000}", ~S(\uD800\uDC00)},
      {"\u{10FFFF}", "\u{10FFFF}", "\u{10FFFF}", "\u{10FFFF}", ~S(\uDBFF\uDFFF)}
    ]

    test "each escape mode writes each special character as its table says" do
      for {char, json, javascript, html, unicode} <- @table,
          {mode, expected} <- [
            json: json,
            javascript_safe: javascript,
            html_safe: html,
            unicode_safe: unicode
          ] do
        assert encode!("a" <> char <> "b", escape: mode) == ~s("a#{expected}b"),
               "#{inspect(char)} in #{mode}"
      end
    end

    test "a special character is escaped wherever it falls in a long string" do
      # Every offset within and across 16- and 32-byte lanes, and at the end.
      for {char, json, javascript, html, unicode} <- @table,
          {mode, expected} <- [
            json: json,
            javascript_safe: javascript,
            html_safe: html,
            unicode_safe: unicode
          ],
          length <- [0, 1, 7, 15, 16, 31, 32, 33, 63, 64, 65, 100],
          at <- Enum.uniq([0, 1, div(length, 2), max(length - 1, 0), length]) do
        plain = String.duplicate("x", length)
        {before, rest} = String.split_at(plain, at)

        assert encode!(before <> char <> rest, escape: mode) ==
                 ~s("#{before}#{expected}#{rest}"),
               "#{inspect(char)} at #{at} of #{length} in #{mode}"
      end
    end
  end

  describe "keys" do
    test "binary, atom and integer keys are written as strings" do
      assert encode!(%{"s" => 1}) == ~s({"s":1})
      assert encode!(%{a: 1}) == ~s({"a":1})
      map = %{nil => 1, true => 2, false => 3}
      pairs = Enum.map_join(map, ",", fn {k, v} -> ~s("#{Atom.to_string(k)}":#{v}) end)
      assert encode!(map) == "{" <> pairs <> "}"
      assert encode!(%{-12 => 1}) == ~s({"-12":1})
      assert encode!(%{(1 <<< 70) => 1}) == ~s({"#{1 <<< 70}":1})
    end

    test "keys are escaped like strings, in every mode" do
      assert encode!(%{"a\"\n" => 1}) == ~S({"a\"\n":1})
      assert encode!(%{"</é" => 1}, escape: :html_safe) == ~S({"\u003C\/é":1})
      assert encode!(%{"é" => 1}, escape: :unicode_safe) == ~S({"\u00E9":1})
    end

    # A call keeps the text of the binary keys it writes, past its first
    # few, and writes a key it meets again from that text.
    test "a key met again in a call is written as the first time, in every mode" do
      keys = for i <- 1..24, do: "k#{i}</é\u2028\n"
      maps = for n <- 1..40, do: Map.new(keys, &{&1, n})

      for mode <- [:json, :unicode_safe, :javascript_safe, :html_safe] do
        each = Enum.map_join(maps, ",", &encode!(&1, escape: mode))
        assert encode!(maps, escape: mode) == "[" <> each <> "]"
      end
    end

    test "other keys are turned into strings by String.Chars, as Jason does" do
      assert encode!(%{1.5 => 1}) == ~s({"1.5":1})
      assert encode!(%{~c"ab" => 1}) == ~s({"ab":1})
      assert encode!(%{~D[2024-01-02] => 1}) == ~s({"2024-01-02":1})
      assert encode!(%{~U[2024-01-02 03:04:05Z] => 1}) == ~s({"2024-01-02 03:04:05Z":1})
      assert encode!(%{URI.parse("http://x/y") => 1}) == ~s({"http://x/y":1})
      assert encode!(%{[?a, "b"] => %{~c"c" => 2}}) == ~s({"ab":{"c":2}})
    end

    test "a key String.Chars turns into something other than a string is an error naming it" do
      assert encode!(%{%McpFramer.OddKey{text: "k"} => 1}) == ~s({"k":1})

      for text <- [:k, 1, ~c"k", ["k"], nil] do
        key = %McpFramer.OddKey{text: text}
        error = error(%{key => 1})
        assert error.reason == :invalid_key
        assert error.value == key
      end
    end

    test "a key String.Chars cannot convert is an error naming it" do
      for key <- [{1}, %{}, self(), make_ref(), [-1]] do
        error = error(%{key => 1})
        assert error.reason == :invalid_key
        assert error.value == key
        assert Exception.message(error) =~ "cannot encode the map key #{inspect(key)}"
      end
    end

    test "under maps: :naive, keys with the same text are all written" do
      map = %{"a" => 1, :a => 2}
      values = map |> Map.to_list() |> Enum.map_join(",", fn {_, v} -> ~s("a":#{v}) end)
      assert encode!(map) == "{" <> values <> "}"
    end

    test "under maps: :strict, a key whose text repeats in its map is an error naming the key" do
      for map <- [
            %{"a" => 1, :a => 2},
            %{"1" => 1, 1 => 2},
            %{"ab" => 1, ~c"ab" => 2},
            %{"1.5" => 1, 1.5 => 2},
            %{"a\"" => 1, :"a\"" => 2}
          ] do
        error = error(%{"outer" => [map]}, maps: :strict)
        assert error.reason == :duplicate_key
        [key] = map |> Map.keys() |> Enum.map(&to_string/1) |> Enum.uniq()
        escaped = String.replace(key, "\"", "\\\"")
        assert error.value == escaped
        assert Exception.message(error) == "duplicate key: #{escaped}"
      end
    end

    test "under maps: :strict, distinct keys pass, in maps of any size" do
      map = Map.new(1..100, &{&1, &1}) |> Map.merge(%{"a" => 1, :b => 2})
      assert encode!(map, maps: :strict) == encode!(map)
      assert encode!(%{"a" => %{"a" => 1}}, maps: :strict) == ~s({"a":{"a":1}})
    end
  end

  describe "errors" do
    test "a string that is not UTF-8 is an error naming its first invalid byte, as Jason's" do
      for {string, byte} <- [
            {<<0xFF>>, 0xFF},
            {"a" <> <<0xC3, ?(>> <> "b", 0xC3},
            {"ok" <> <<0xED, 0xA0, 0x80>>, 0xED},
            {<<0xF4, 0x90, 0x80, 0x80>>, 0xF4},
            {"a" <> <<0xE2, 0x82>>, 0xE2},
            {<<0xC0, 0xAF>>, 0xC0},
            {"é" <> <<0x80>>, 0x80},
            {String.duplicate("x", 100) <> <<0xF8>>, 0xF8}
          ] do
        error = error(%{"k" => [string]})
        assert {error.reason, error.byte, error.value} == {:invalid_byte, byte, string}

        assert Exception.message(error) ==
                 "invalid byte #{inspect(byte, base: :hex)} in #{inspect(string)}"

        for mode <- [:unicode_safe, :javascript_safe, :html_safe] do
          assert error(string, escape: mode).byte == byte
        end
      end
    end

    test "a long string's first invalid byte is found wherever it is, escapes or none" do
      for body <- [String.duplicate("é\"x", 3000), String.duplicate("é", 5000)],
          at <- [0, 511, 512, 4607, 4608, byte_size(body) - 2],
          {bad, byte} <- [{<<0xFF>>, 0xFF}, {<<0xC3, ?(>>, 0xC3}] do
        # Cut where a character starts, so that the bad bytes come first.
        at = if at > 0 and :binary.at(body, at) in 0x80..0xBF, do: at - 1, else: at
        string = binary_part(body, 0, at) <> bad <> binary_part(body, at, byte_size(body) - at)
        error = error(%{"k" => [string]})
        assert {error.reason, error.byte} == {:invalid_byte, byte}

        for mode <- [:unicode_safe, :javascript_safe, :html_safe] do
          assert error(string, escape: mode).byte == byte
        end
      end
    end

    test "a key that is not UTF-8 is an error too" do
      assert error(%{<<0xFF>> => 1}).value == <<0xFF>>
    end

    test "a struct other than the four calendar ones is an error naming it and saying what to do" do
      error = error(%{"uri" => URI.parse("http://x")})
      assert error.reason == :struct
      assert %URI{} = error.value
      message = Exception.message(error)
      assert message =~ "%URI{}"
      assert message =~ "Map.from_struct/1"
    end

    test "a calendar struct without its fields raises what its to_iso8601/1 raises, as in Jason" do
      # As data, which Elixir 1.20's type checker does not judge.
      broken = Map.new([{:__struct__, Date}])
      assert_raise FunctionClauseError, fn -> JSON.encode(["x", broken]) end
    end

    test "an error before a calendar struct whose to_iso8601/1 raises is returned, as Jason returns it first" do
      broken = Map.new([{:__struct__, Date}])
      assert error([{1}, broken]).value == {1}
      assert error([~D[2026-12-06], {1}, broken]).value == {1}
      assert error(%{1.5 => {1}, "z" => broken}).value == {1}
      assert error(%{{:a} => broken}).value == {:a}
      assert_raise FunctionClauseError, fn -> JSON.encode([broken, {1}]) end

      assert_raise FunctionClauseError, fn ->
        JSON.encode_to_iodata(%{1.5 => broken, "z" => {1}})
      end
    end

    test "a map whose __struct__ is not an atom is a map, as in Jason" do
      map = %{:__struct__ => "x", :a => 1}
      pairs = Enum.map_join(map, ",", fn {k, v} -> ~s("#{k}":#{inspect(v)}) end)
      assert encode!(map) == "{" <> pairs <> "}"
    end

    test "tuples, pids, references, functions, ports and bitstrings are errors naming them" do
      # A port of a command that exits at once, and closes it.
      port = Port.open({:spawn, "true"}, [])

      for term <- [{1, 2}, self(), make_ref(), &Enum.map/2, port, <<1::3>>] do
        error = error(["x", term])
        assert {error.reason, error.value} == {:unsupported, term}
        assert Exception.message(error) =~ "cannot encode"
      end
    end

    test "an improper list is an error naming its tail" do
      error = error([1, 2 | 3])
      assert {error.reason, error.value} == {:improper_list, 3}
    end

    test "the message of an unsupported term or an improper list shows the culprit" do
      for {term, message} <- [
            {{1, 2},
             "cannot encode {1, 2} as JSON: only maps, lists, binaries, numbers, atoms and " <>
               "the Date, Time, NaiveDateTime and DateTime structs have a JSON form"},
            {<<1::3>>, "cannot encode a bitstring as JSON: <<1::size(3)>>"},
            {[1 | 2], "cannot encode an improper list as JSON: its tail is 2"}
          ] do
        assert Exception.message(error(term)) == message
      end
    end

    test "of several errors, the first in the order of the text is reported" do
      assert error([<<0xFF>>, {1}]).reason == :invalid_byte
      assert error([{1}, <<0xFF>>]).reason == :unsupported
      assert error([~D[2024-01-02], {1}, URI.parse("x")]).reason == :unsupported
      assert error([URI.parse("x"), ~D[2024-01-02], {1}]).reason == :struct
      # Keys before their values, pairs in Map.to_list/1's order.
      assert error(%{{1} => <<0xFF>>}).reason == :invalid_key
      map = %{:a => <<0xFF>>, "a" => {1}}
      first = if match?([{:a, _} | _], Map.to_list(map)), do: :invalid_byte, else: :unsupported
      assert error(map, maps: :strict).reason == first
      assert error(%{1.5 => [{1}], "1.5" => 1}, maps: :strict).reason == :unsupported
    end

    test "the message is in a message field too, Jason's error's only field" do
      {:error, %EncodeError{message: message} = error} = JSON.encode(<<0xFF>>)
      assert message == "invalid byte 0xFF in <<255>>"
      assert message == Exception.message(error)

      assert %EncodeError{message: "duplicate key: a"} =
               EncodeError.exception({:duplicate_key, "a"})
    end

    test "a message given is the message, as Jason's error takes it" do
      assert_raise EncodeError, "custom", fn -> raise EncodeError, "custom" end
      assert_raise EncodeError, "custom", fn -> raise EncodeError, message: "custom" end
      error = %EncodeError{reason: :duplicate_key, value: "a"}
      assert Exception.message(error) == "duplicate key: a"
    end

    test "a reason of the caller's own is named in the message, with its value" do
      error = EncodeError.exception(reason: :too_deep, value: [1])
      assert Exception.message(error) == "cannot encode [1] as JSON (:too_deep)"
    end

    test "a message given leaves the other fields unset" do
      assert EncodeError.exception("custom") ==
               %EncodeError{message: "custom", reason: nil, value: nil, byte: nil}
    end

    test "encode!/2, encode_to_iodata!/2 and encode_line!/2 raise the error" do
      assert_raise EncodeError, "invalid byte 0xFF in <<255>>", fn -> JSON.encode!(<<0xFF>>) end
      assert_raise EncodeError, fn -> JSON.encode_to_iodata!({1}) end
      assert_raise EncodeError, fn -> JSON.encode_line!([1 | 2]) end
    end
  end

  describe "options" do
    test "options are checked, each error naming the option and its values" do
      for {opts, message} <- [
            {[escape: :js],
             ~r/^expected :escape to be :json, :unicode_safe, :javascript_safe or :html_safe \(or Poison's names, :unicode and :javascript\), got: :js$/},
            {[escape: "json"], ~r/:escape to be/},
            {[maps: :lax], ~r/:maps to be :naive or :strict/},
            {[pretty: :yes], ~r/:pretty to be true, false or a keyword list/},
            {[pretty: [indent: 2]], ~r/:indent in :pretty to be iodata, got: 2/},
            {[pretty: [width: 2]], ~r/unknown option\(s\) \[:width\] in :pretty/},
            {[indent: 2], ~r/unknown McpFramer.JSON encoding option\(s\) \[:indent\]/},
            {%{escape: :json}, ~r/expects a keyword list/},
            {[:json], ~r/expects a keyword list/}
          ],
          encode <- [
            &JSON.encode/2,
            &JSON.encode!/2,
            &JSON.encode_to_iodata/2,
            &JSON.encode_line/2
          ] do
        assert_raise ArgumentError, message, fn -> encode.(%{}, opts) end
      end
    end

    test "an option error's message says what is taken and what was given" do
      for {encode, opts, message} <- [
            {&JSON.encode/2, [maps: :lax], "expected :maps to be :naive or :strict, got: :lax"},
            {&JSON.encode/2, [pretty: [1]],
             "expected a keyword list of options in :pretty, got: [1]"},
            {&JSON.encode/2, [pretty: nil],
             "expected :pretty to be true, false or a keyword list, got: nil"},
            {&JSON.encode/2, [indent: 2],
             "unknown McpFramer.JSON encoding option(s) [:indent]; " <>
               "the options are :escape, :maps and :pretty"},
            {&JSON.encode_line/2, [pretty: true],
             "a line cannot be pretty-printed: its newlines would end the message; " <>
               "use encode/2 or encode_to_iodata/2 for pretty: text"}
          ] do
        assert_raise ArgumentError, message, fn -> encode.(%{}, opts) end
      end
    end

    test "pretty: false is the compact text" do
      assert encode!(%{a: [1]}, pretty: false) == ~s({"a":[1]})
    end
  end

  describe "Poison's names" do
    test "escape: :javascript and :unicode, kept by Jason, are the _safe modes" do
      text = "</a>\u2028é😀\n"

      for {poison, jason} <- [javascript: :javascript_safe, unicode: :unicode_safe] do
        assert encode!(text, escape: poison) == encode!(text, escape: jason)
        assert encode!(text, escape: poison) != encode!(text)
      end
    end
  end

  describe "forms" do
    test "encode_to_iodata/2 is the same text as encode/2" do
      term = %{"text" => String.duplicate("x", 5000), "n" => [1, 2.5, "é"]}
      {:ok, iodata} = JSON.encode_to_iodata(term)
      assert IO.iodata_to_binary(iodata) == encode!(term)
      assert IO.iodata_to_binary(JSON.encode_to_iodata!(term)) == encode!(term)
    end

    # A text over 32 KiB is copied into its binary a step at a time, the
    # strings referred to included: whole, in order, at every length
    # around a step's end, in every form.
    test "long texts are written whole, in every form" do
      for size <- [32_760, 32_761, 32_762, 65_530, 100_000],
          term <- [[String.duplicate("a\n", div(size, 2))], [String.duplicate("b", size), "c\n"]] do
        [text | rest] = term
        escaped = String.replace(text, "\n", "\\n")

        expected =
          ~s([") <>
            escaped <>
            Enum.map_join(rest, &(~s(",") <> String.replace(&1, "\n", "\\n"))) <> ~s("])

        assert encode!(term) == expected
        assert IO.iodata_to_binary(JSON.encode_to_iodata!(term)) == expected
        assert IO.iodata_to_binary(JSON.encode_line!(term)) == expected <> "\n"
      end
    end

    test "encode_line/2 is the text and a newline, and the text holds no other newline" do
      term = %{"text" => "line one\nline two\r\n" <> String.duplicate("y", 5000)}
      {:ok, line} = JSON.encode_line(term)
      line = IO.iodata_to_binary(line)
      assert line == encode!(term) <> "\n"
      assert :binary.matches(line, "\n") == [{byte_size(line) - 1, 1}]
      assert IO.iodata_to_binary(JSON.encode_line!(1)) == "1\n"
    end
  end
end
