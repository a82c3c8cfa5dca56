defmodule McpFramer.DecodeOptionsTest do
  # The decoding options: the caller's limits (max_depth, max_values,
  # duplicate_keys) and Jason 1.4.5's key options (keys: :strings, :atoms,
  # :atoms!). One test per rule, each through McpFramer.JSON and through a
  # decoding framer fed the line cut at every point, against the oracle too.
  use ExUnit.Case, async: true

  import McpFramer.Agreement, only: [oracle_result: 2]

  alias McpFramer.{Chunks, DecodeError, Frames, JSON}

  # What McpFramer.JSON.decode/2 gives for `line`, after checking that a
  # framer with the same options gives the same item however the line is
  # cut, and that the oracle agrees. The oracle goes first: were the NIF to
  # make an atom it should not, the oracle would find it existing.
  defp decoded(line, opts) do
    expected = oracle_result(line, opts)
    direct = JSON.decode(line, opts)
    assert framed(line, opts) == direct
    assert expected == direct
    direct
  end

  # The item a decoding framer gives for `line`, the same for every cut.
  defp framed(line, opts) do
    stream = line <> "\n"

    [item | _] =
      items =
      for at <- 0..byte_size(stream) do
        [item] = Frames.frame(McpFramer.new([decode: :json] ++ opts), Chunks.at(stream, [at]))
        item
      end

    assert Enum.uniq(items) == [item]
    item
  end

  defp limit_error(line, position, limit, value) do
    {:error,
     %DecodeError{
       position: position,
       token: nil,
       data: line,
       limit: limit,
       limit_value: value
     }}
  end

  # An atom that no test or module names, so that it does not exist.
  defp unknown_key, do: "not_an_atom_#{System.unique_integer([:positive])}"

  describe "max_depth" do
    test "a top-level array or object is depth 1" do
      assert decoded("[1,2]", max_depth: 1) == {:ok, [1, 2]}
      assert decoded(~s({"a":{}}), max_depth: 2) == {:ok, %{"a" => %{}}}
      assert decoded("7", max_depth: 1) == {:ok, 7}
    end

    test "a document is rejected at the bracket that would open one level more" do
      assert decoded("[[1]]", max_depth: 1) == limit_error("[[1]]", 1, :max_depth, 1)
      assert decoded("[[]]", max_depth: 1) == limit_error("[[]]", 1, :max_depth, 1)

      line = ~s({"a":[1,{"b":2}]})
      assert decoded(line, max_depth: 2) == limit_error(line, 8, :max_depth, 2)
    end
  end

  describe "max_values" do
    test "each scalar, array and object counts one; keys do not" do
      assert decoded("[1,2]", max_values: 3) == {:ok, [1, 2]}
      assert decoded(~s({"a":[]}), max_values: 3) == {:ok, %{"a" => []}}
      assert decoded(~s({"a":[]}), max_values: 2) == {:ok, %{"a" => []}}
    end

    test "a document is rejected at the first byte of the value past the limit" do
      assert decoded("[1,2,3]", max_values: 3) == limit_error("[1,2,3]", 5, :max_values, 3)

      line = ~s({"a":{"b":1}})
      assert decoded(line, max_values: 2) == limit_error(line, 10, :max_values, 2)
    end
  end

  describe "duplicate_keys" do
    test ":first keeps the first of a repeated key, as Jason does" do
      for opts <- [[], [duplicate_keys: :first]] do
        assert decoded(~s({"a":1,"a":2}), opts) == {:ok, %{"a" => 1}}
      end
    end

    test ":error rejects a repeated key at its opening quote" do
      line = ~s({"a":1,"a":2})

      assert decoded(line, duplicate_keys: :error) ==
               limit_error(line, 7, :duplicate_keys, :error)
    end

    test "each object is checked on its own, nested ones included" do
      line = ~s({"a":{"a":1},"b":[{"a":2},{"a":3}]})
      assert {:ok, _} = decoded(line, duplicate_keys: :error)

      line = ~s({"a":{"x":1,"y":2,"x":3}})

      assert decoded(line, duplicate_keys: :error) ==
               limit_error(line, 18, :duplicate_keys, :error)
    end

    test "keys are compared decoded" do
      line = ~s({"a":1,"\\u0061":2})

      assert decoded(line, duplicate_keys: :error) ==
               limit_error(line, 7, :duplicate_keys, :error)
    end
  end

  describe "options given to the NIF directly" do
    test "a field McpFramer.JSON would not make, in any place, is refused" do
      valid = {:reference, :strings, 0, 0, :first}
      assert McpFramer.Native.decode("{}", valid) == {:ok, %{}}

      # One field at a time: strings, keys, duplicate_keys, each an atom the
      # NIF does not take, and limits that are not unsigned integers.
      for {field, value} <- [{0, :copied}, {1, :existing}, {4, :last}, {2, -1}, {3, :infinity}] do
        options = put_elem(valid, field, value)

        assert_raise ArgumentError, ~r/decoding options made by McpFramer.JSON/, fn ->
          McpFramer.Native.decode("{}", options)
        end
      end
    end
  end

  describe "any limit" do
    test "the error names the option in limit and its value in limit_value; other errors have nil" do
      assert {:error, %DecodeError{limit: :max_values, limit_value: 1}} =
               decoded("[1]", max_values: 1)

      assert {:error, %DecodeError{limit: nil, limit_value: nil, token: nil}} =
               decoded("[1,]", max_values: 5)

      assert {:error, %DecodeError{limit: nil, token: "1e999"}} = decoded("1e999", max_depth: 1)
    end

    test "Exception.message/1 names the option and its value" do
      {:error, error} = JSON.decode("[[1]]", max_depth: 1)
      assert Exception.message(error) =~ "max_depth: 1"
      assert Exception.message(error) =~ "position 1"

      {:error, error} = JSON.decode(~s({"a":1,"a":2}), duplicate_keys: :error)
      assert Exception.message(error) =~ "duplicate_keys: :error"
    end

    test "Exception.message/1 says which limit was passed, in words" do
      for {error, message} <- [
            {%DecodeError{position: 1, data: "[[1]]", limit: :max_depth, limit_value: 1},
             "nesting deeper than the limit at position 1 of the JSON document (max_depth: 1)"},
            {%DecodeError{position: 3, data: "[1,2]", limit: :max_values, limit_value: 2},
             "more values than the limit at position 3 of the JSON document (max_values: 2)"},
            {%DecodeError{
               position: 7,
               data: ~s({"a":1,"a":2}),
               limit: :duplicate_keys,
               limit_value: :error
             },
             "a key repeated within its object at position 7 of the JSON document " <>
               "(duplicate_keys: :error)"},
            {%DecodeError{position: 1, data: ~s({"b":1}), limit: :keys, limit_value: :atoms!},
             "a key that cannot become an atom at position 1 of the JSON document " <>
               "(keys: :atoms!)"},
            # Made by hand, without the document.
            {%DecodeError{position: 3}, "invalid JSON at position 3"}
          ] do
        assert Exception.message(error) == message
      end
    end

    test "the document is read left to right, and the first thing wrong wins" do
      # A syntax error before the limit is reached is the error.
      assert {:error, %DecodeError{position: 3, limit: nil}} =
               decoded("[1,x,[[2]]]", max_depth: 1)

      assert {:error, %DecodeError{position: 3, limit: nil}} = decoded("[1,x,3,4]", max_values: 3)

      assert {:error, %DecodeError{position: 6, limit: nil}} =
               decoded(~s({"a":01,"a":2}), duplicate_keys: :error)

      # A limit before a later syntax error is the error.
      assert {:error, %DecodeError{position: 1, limit: :max_depth}} =
               decoded("[[1],x", max_depth: 1)

      assert {:error, %DecodeError{position: 7, limit: :duplicate_keys}} =
               decoded(~s({"a":1,"a" 2}), duplicate_keys: :error)
    end

    test "in a framer, a line past a limit costs only itself" do
      framer = McpFramer.new(decode: :json, max_depth: 2, max_values: 4)
      chunk = ~s({"a":1}\n[[[1]]]\n[1,2,3,4]\n{"b":[2]}\n)

      assert {:ok, [{:ok, %{"a" => 1}}, {:error, depth}, {:error, values}, {:ok, %{"b" => [2]}}],
              _framer} = McpFramer.feed(framer, chunk)

      assert {depth.limit, depth.position, values.limit, values.position} ==
               {:max_depth, 2, :max_values, 7}
    end

    test "bad option values raise ArgumentError naming the option" do
      for {name, value} <- [
            max_depth: 0,
            max_depth: -1,
            max_depth: 1.5,
            max_values: 0,
            max_values: :none,
            duplicate_keys: :last,
            keys: :maybe
          ] do
        message = "expected #{inspect(name)} to be"

        assert_raise ArgumentError, ~r/#{message}/, fn -> JSON.decode("1", [{name, value}]) end

        assert_raise ArgumentError, ~r/#{message}/, fn ->
          McpFramer.new([{:decode, :json}, {name, value}])
        end

        assert_raise ArgumentError, ~r/#{message}/, fn ->
          McpFramer.stream(["1\n"], [{:decode, :json}, {name, value}])
        end
      end

      assert_raise ArgumentError, ~r/only with decode: :json/, fn ->
        McpFramer.new(max_depth: 3)
      end
    end

    test "a limit takes any positive integer up to 2^64 - 1" do
      for name <- [:max_depth, :max_values] do
        assert JSON.decode("[1]", [{name, 2 ** 64 - 1}]) == {:ok, [1]}

        assert_raise ArgumentError,
                     "expected #{inspect(name)} to be a positive integer up to " <>
                       "18446744073709551615, got: 18446744073709551616",
                     fn -> JSON.decode("[1]", [{name, 2 ** 64}]) end
      end
    end

    test "each bad option's message says what the option takes" do
      for {opts, message} <- [
            {[strings: :other], "expected :strings to be :reference or :copy, got: :other"},
            {[keys: :maybe],
             "expected :keys to be :strings, :atoms, :atoms! or a function of one argument, " <>
               "got: :maybe"},
            {[duplicate_keys: :last],
             "expected :duplicate_keys to be :first or :error, got: :last"},
            {[floats: :decimals],
             "floats: :decimals needs the decimal package, which McpFramer does not use; " <>
               "only floats: :native is offered"},
            {[max_dept: 1],
             "unknown McpFramer.JSON option(s) [:max_dept]; the decoding options are :strings, " <>
               ":keys, :max_depth, :max_values, :duplicate_keys, :floats, :objects"}
          ] do
        assert_raise ArgumentError, message, fn -> JSON.decode("1", opts) end
      end
    end

    test "an option given twice takes its last value, the first unread, as Jason's do" do
      assert JSON.decode("[[1]]", max_depth: 0, max_depth: 1) ==
               {:error,
                %DecodeError{position: 1, data: "[[1]]", limit: :max_depth, limit_value: 1}}

      assert JSON.decode(~s({"a":1}), keys: :maybe, keys: :atoms) == {:ok, %{a: 1}}
      framer = McpFramer.new(decode: :json, strings: nil, strings: :copy)
      assert {:ok, [ok: [1]], _} = McpFramer.feed(framer, "[1]\n")
    end

    test "McpFramer.stream/2 takes the options with decode: :json" do
      items =
        McpFramer.stream(["[[1]]\n[2", "]\n"], decode: :json, max_depth: 1) |> Enum.to_list()

      assert [{:error, %DecodeError{limit: :max_depth}}, {:ok, [2]}] = items
    end
  end

  describe "keys" do
    test ":strings is the default" do
      assert decoded(~s({"a":{"b":1}}), []) == {:ok, %{"a" => %{"b" => 1}}}
      assert decoded(~s({"a":{"b":1}}), keys: :strings) == {:ok, %{"a" => %{"b" => 1}}}
    end

    test ":atoms makes atoms as String.to_atom/1 does" do
      key = unknown_key()
      line = ~s({"#{key}":{"b":[{"c":null}]}})
      assert {:ok, term} = JSON.decode(line, keys: :atoms)
      assert term == %{String.to_existing_atom(key) => %{b: [%{c: nil}]}}
      assert framed(line, keys: :atoms) == {:ok, term}
      assert oracle_result(line, keys: :atoms) == {:ok, term}
    end

    test ":atoms! takes existing atoms, as String.to_existing_atom/1 does" do
      assert decoded(~s({"ok":{"error":1}}), keys: :atoms!) == {:ok, %{ok: %{error: 1}}}
    end

    test "keys may be any UTF-8" do
      for keys <- [:atoms, :atoms!] do
        _ = String.to_atom("日本語")
        _ = String.to_atom("été")
        _ = String.to_atom("😀")

        assert decoded(~s({"日本語":1,"\\u00e9t\\u00e9":2,"\\ud83d\\ude00":3}), keys: keys) ==
                 {:ok, %{日本語: 1, été: 2, "😀": 3}}
      end
    end

    test "a repeated key is compared after conversion, and the first wins" do
      assert decoded(~s({"a":1,"\\u0061":2}), keys: :atoms) == {:ok, %{a: 1}}

      line = ~s({"a":1,"\\u0061":2})

      assert decoded(line, keys: :atoms, duplicate_keys: :error) ==
               limit_error(line, 7, :duplicate_keys, :error)
    end

    test "McpFramer.JSON raises what Jason raises for a key that cannot become an atom" do
      unknown = unknown_key()

      assert_raise ArgumentError, ~r/not an already existing atom/, fn ->
        JSON.decode(~s({"ok":1,"#{unknown}":2}), keys: :atoms!)
      end

      assert_raise ArgumentError, fn -> JSON.decode!(~s({"#{unknown}":2}), keys: :atoms!) end

      long = String.duplicate("é", 256)
      assert_raise SystemLimitError, fn -> JSON.decode(~s({"#{long}":1}), keys: :atoms) end
      assert_raise ArgumentError, fn -> JSON.decode(~s({"#{long}":1}), keys: :atoms!) end

      assert_raise SystemLimitError, fn ->
        JSON.decode(~s({"a":{"#{String.duplicate("x", 256)}":1}}), keys: :atoms)
      end

      # 255 characters of four bytes each make an atom.
      key = String.duplicate("😀", 255)
      assert {:ok, %{} = term} = JSON.decode(~s({"#{key}":1}), keys: :atoms)
      assert Map.keys(term) == [String.to_existing_atom(key)]
    end

    test "a framer gives an error naming the key's position instead, and the chunk's other messages" do
      unknown = unknown_key()
      long = String.duplicate("x", 256)

      for {line, keys} <- [
            {~s({"ok":1,"#{unknown}":2}), :atoms!},
            {~s({"ok":1,"#{long}":2}), :atoms!},
            {~s({"ok":1,"#{long}":2}), :atoms}
          ] do
        expected = limit_error(line, 8, :keys, keys)
        assert framed(line, keys: keys) == expected

        framer = McpFramer.new(decode: :json, keys: keys)
        chunk = ~s({"ok":1}\n) <> line <> ~s(\n{"error":2}\n)

        assert {:ok, [{:ok, %{ok: 1}}, ^expected, {:ok, %{error: 2}}], _framer} =
                 McpFramer.feed(framer, chunk)
      end

      {:error, error} = framed(~s({"#{unknown}":1}), keys: :atoms!)
      assert Exception.message(error) =~ "keys: :atoms!"
    end

    test "a framer gives the key's error for a message decoded on a dirty scheduler too" do
      # Over 1 MiB, so the message is left for a dirty scheduler.
      line = ~s({"#{unknown_key()}":") <> String.duplicate("x", 2 * 1024 * 1024) <> ~s("})
      expected = limit_error(line, 1, :keys, :atoms!)
      framer = McpFramer.new(decode: :json, keys: :atoms!)

      assert {:ok, [{:ok, 1}, ^expected, {:ok, 2}], _framer} =
               McpFramer.feed(framer, "1\n" <> line <> "\n2\n")
    end

    test "a key is converted once its pair is complete, so an error in its value comes first" do
      unknown = unknown_key()

      for line <- [~s({"#{unknown}":[1,}), ~s({"#{unknown}":1 2}), ~s({"#{unknown}":{"a":1,"a")] do
        assert {:error, %DecodeError{limit: nil} = error} = JSON.decode(line, keys: :atoms!)
        assert {:error, error} == framed(line, keys: :atoms!)
        assert {:error, error} == oracle_result(line, keys: :atoms!)
      end

      # The pair is complete at its comma, before the next key is read.
      line = ~s({"#{unknown}":1,"x)
      assert_raise ArgumentError, fn -> JSON.decode(line, keys: :atoms!) end
      assert framed(line, keys: :atoms!) == limit_error(line, 1, :keys, :atoms!)
    end

    # The VM's atom count is not looked at: tests beside this one make atoms.
    test "keys: :atoms! makes no atom, whatever the key's characters" do
      for key <- [unknown_key(), unknown_key() <> "é", "日本_#{unknown_key()}", "😀#{unknown_key()}"] do
        line = ~s({"#{key}":1})
        assert_raise ArgumentError, fn -> JSON.decode(line, keys: :atoms!) end
        assert framed(line, keys: :atoms!) == limit_error(line, 1, :keys, :atoms!)
        assert_raise ArgumentError, fn -> String.to_existing_atom(key) end
      end
    end

    test "keys: :atoms makes each new atom of nested objects from its own name" do
      [outer, inner, last] = for _ <- 1..3, do: unknown_key()
      line = ~s({"#{outer}":{"#{inner}":{"é#{last}":1},"#{inner}2":2},"#{last}":3})
      assert {:ok, term} = JSON.decode(line, keys: :atoms)

      assert term == %{
               String.to_existing_atom(outer) => %{
                 String.to_existing_atom(inner) => %{String.to_existing_atom("é" <> last) => 1},
                 String.to_existing_atom(inner <> "2") => 2
               },
               String.to_existing_atom(last) => 3
             }

      assert framed(line, keys: :atoms) == {:ok, term}
    end

    test "a key of 255 characters of any width becomes an atom; one more raises" do
      for char <- ["x", "é", "日", "😀", "e\u0301"] do
        key = String.duplicate(char, div(255, length(String.to_charlist(char))))
        assert {:ok, term} = JSON.decode(~s({"#{key}":1}), keys: :atoms)
        assert Map.keys(term) == [String.to_existing_atom(key)]
      end

      # 400 code points in 200 graphemes: too long for an atom.
      key = String.duplicate("e\u0301", 200)
      assert_raise SystemLimitError, fn -> JSON.decode(~s({"#{key}":1}), keys: :atoms) end

      assert oracle_result(~s({"#{key}":1}), keys: :atoms) ==
               limit_error(~s({"#{key}":1}), 1, :keys, :atoms)
    end

    test "no atom is made for a pair whose value is not JSON" do
      key = unknown_key()
      assert {:error, _} = JSON.decode(~s({"#{key}":[1,}), keys: :atoms)
      assert {:error, _} = framed(~s({"#{key}":[1,}), keys: :atoms)
      assert_raise ArgumentError, fn -> String.to_existing_atom(key) end
    end

    test "the options that need other packages raise ArgumentError saying so" do
      assert_raise ArgumentError, ~r/decimal/, fn -> JSON.decode("1.5", floats: :decimals) end

      assert_raise ArgumentError, ~r/OrderedObject/, fn ->
        JSON.decode("{}", objects: :ordered_objects)
      end

      assert JSON.decode("[1.5,{}]", floats: :native, objects: :maps) == {:ok, [1.5, %{}]}
    end
  end
end
