defmodule McpFramer.JSONOracleTest do
  # The oracle against the rules in native/mcp_framer_core/tests/json_rules.rs,
  # one test per rule with the same name and the same inputs, so the oracle
  # and the Rust parser are seen to agree on them. Where they do not, the
  # test says what Jason 1.4 does and why.
  #
  # Not ported, as they test the Rust Builder and not what Jason returns:
  # a_builder_error_stops_parsing_at_the_value_it_refused and
  # value_builder_refuses_counts_it_did_not_build.
  use ExUnit.Case, async: true

  import McpFramer.Memory, only: [kept_alive: 1]

  alias McpFramer.TestJSON

  defp ok(input) do
    assert {:ok, value} = TestJSON.decode(input)
    value
  end

  defp error(input) do
    assert {:error, %{position: position, token: token}} = TestJSON.decode(input)
    {position, token}
  end

  # The position of an error with no token.
  defp error_at(input) do
    assert {position, nil} = error(input)
    position
  end

  # A float's bits: on OTP 25, -0.0 === 0.0.
  defp bits(float) when is_float(float), do: <<float::float>>

  # Structure

  test "objects_become_maps_with_string_keys" do
    assert ok(~s( { "a" : 1 , "b":{} } )) === %{"a" => 1, "b" => %{}}
  end

  test "duplicate_key_first_occurrence_wins" do
    assert ok(~s({"a":1,"b":2,"a":3,"a":4})) === %{"a" => 1, "b" => 2}
  end

  test "duplicate_keys_are_all_given_to_the_builder" do
    # The builder is Rust's; what Jason returns for its input:
    assert ok(~s({"a":1,"a":2})) === %{"a" => 1}
    # and past 32 pairs, where a map is a hash map.
    pairs = for n <- 1..40, do: ~s("k#{n}":#{n})
    input = "{" <> Enum.join(pairs ++ [~s("k7":0), ~s("k40":0)], ",") <> "}"
    assert ok(input) === Map.new(1..40, &{"k#{&1}", &1})
  end

  test "arrays_become_lists_in_order" do
    assert ok(~s( [ 1 , [ ] ,"x" ] )) === [1, [], "x"]
  end

  test "true_false_and_null_are_literals" do
    assert ok("[true,false,null]") === [true, false, nil]
  end

  test "a_misspelt_literal_is_an_error_at_its_first_byte" do
    assert error_at("[trux]") == 1
    # Reported at the `n`, before the end: an unexpected byte.
    assert error_at("[nul") == 1
    assert error_at("True") == 0
  end

  test "a_trailing_comma_is_an_error_at_the_bracket" do
    assert error_at("[1,]") == 3
    assert error_at(~s({"a":1,})) == 7
  end

  test "a_missing_comma_or_colon_is_an_error_at_the_byte_found" do
    assert error_at("[1 2]") == 3
    assert error_at(~s({"a" 1})) == 5
    assert error_at("{1:2}") == 1
  end

  test "million_open_brackets_do_not_overflow_the_stack" do
    input = :binary.copy("[", 1_000_000)
    assert error(input) == {byte_size(input), nil}
  end

  test "depth_is_limited_only_by_input_length" do
    depth = 1_000_000
    input = :binary.copy("[", depth) <> :binary.copy("]", depth)
    assert depth(ok(input), 0) == depth
  end

  # Strings

  test "all_escapes_are_decoded" do
    assert ok(~S("\"\\\/\b\f\n\r\t\u0041\u00e9\u20AC")) === "\"\\/\b\f\n\r\tAé€"
  end

  test "an_unknown_escape_is_an_error_at_its_letter_up_to_u_and_at_its_backslash_past_it" do
    assert error_at(~S("\U0041")) == 2
    assert error_at(<<?", ?\\, 0, ?">>) == 2
    assert error_at(~s("\\\n")) == 2
    assert error_at(~S("ab\a")) == 4
    assert error_at(~S("ab\x")) == 3
    assert error_at(~S("\v")) == 1
    assert error_at(<<?", ?\\, 0x7F, ?">>) == 1
    # The four such files of JSONTestSuite.
    assert error_at(~S(["\x00"])) == 2
    assert error_at(~s(["\\🌀"])) == 2
    assert error_at(<<?[, ?", ?\\, 0xE5, ?", ?]>>) == 2
    assert error_at(~S(["\{["\{["\{["\{)) == 2
  end

  test "surrogate_pairs_are_joined" do
    assert ok(~S("\ud83d\ude00")) === "😀"
    assert ok(~S("\uD834\uDD1E")) === "𝄞"
  end

  test "lone_surrogate_is_an_error" do
    # A lone low surrogate: the escape is the token.
    assert error(~S("\udc00")) == {1, ~S(\udc00)}
    # A high surrogate followed by something other than an escape: the
    # error is where the low one should begin.
    assert error_at(~S("\ud800x")) == 7
    assert error_at(~S("\ud800")) == 7
    # A high surrogate followed by another escape that is not a low one:
    # the pair is the token.
    assert error(~S("\ud800\u0041")) == {1, ~S(\ud800\u0041)}
    assert error(~S("\ud800\ud800")) == {1, ~S(\ud800\ud800)}
  end

  test "a_bad_hex_escape_is_an_error_at_its_backslash" do
    assert error(~S(["\u12G4"])) == {2, ~S(\u12G4)}
    # Cut short: Jason needs four bytes before it reads any.
    assert error_at(~S("\u12)) == 1
    # Bad last digits of a low surrogate blame the low escape alone.
    assert error(~S("\ud800\udcZZ")) == {7, ~S(\udcZZ)}
  end

  test "invalid_utf8_is_an_error_at_the_first_bad_byte" do
    assert error_at(<<?", ?a, ?b, 0xFF, ?">>) == 3
    assert error_at(<<?", 0xE2, 0x82, ?">>) == 1
    # An encoded surrogate is not UTF-8 either.
    assert error_at(<<?", ?a, 0xED, 0xA0, 0x80, ?">>) == 2
    # After an escape, too.
    assert error_at(<<?", ?\\, ?n, 0xC0, 0xAF, ?">>) == 3
  end

  test "an_unescaped_control_byte_in_a_string_is_an_error" do
    # DISAGREES with json_rules.rs, which expects 1 and 5: the start of the
    # run of unescaped text holding the byte, as Jason reported before 1.3.
    # Jason 1.3.0 fixed that ("mis-attribute the offending byte"): from
    # then on, and so in 1.4, the error is at the control byte itself.
    assert error_at("\"abc\x01\"") == 4
    assert error_at("[\"a\\nb\nc\"]") == 6
    assert error_at("\"\t\"") == 1
  end

  test "escaped_nul_is_fine" do
    assert ok(~S("a\u0000b")) === "a\0b"
  end

  test "delete_and_non_ascii_text_need_no_escape" do
    assert ok("\"\x7fé€😀\"") === "\x7fé€😀"
  end

  test "strings_without_escapes_are_borrowed_from_the_input" do
    # Jason's default `strings: :reference`: a slice of the input, which
    # the VM makes a sub-binary from 64 bytes up.
    text = String.duplicate("no escapes ", 10)
    input = ~s("#{text}")
    assert ok(input) === text
    assert kept_alive(ok(input)) == byte_size(input)
    assert ok(~S("a\n")) === "a\n"
  end

  test "an_unterminated_string_is_an_unexpected_end" do
    assert error("\"abc") == {4, nil}
    # Cut off after a backslash: Jason blames the backslash.
    assert error_at("\"ab\\") == 3
  end

  # Numbers

  test "integers_that_fit_i64_are_integers" do
    assert ok("0") === 0
    assert ok("-12") === -12
    assert ok("9223372036854775807") === 9_223_372_036_854_775_807
    assert ok("-9223372036854775808") === -9_223_372_036_854_775_808
  end

  test "integers_of_any_size_are_kept_exactly" do
    assert ok("9223372036854775808") === 9_223_372_036_854_775_808
    assert ok("-9223372036854775809") === -9_223_372_036_854_775_809
    assert ok("-1" <> String.duplicate("0", 400)) === -Integer.pow(10, 400)
  end

  test "minus_zero_is_integer_zero" do
    assert ok("-0") === 0
  end

  test "a_fraction_or_exponent_makes_a_float" do
    assert ok("1.5") === 1.5
    assert ok("1e2") === 100.0
    assert ok("1E+2") === 100.0
    assert ok("-2.5e-1") === -0.25
    assert bits(ok("0e0")) == bits(0.0)
  end

  test "floats_are_correctly_rounded" do
    assert ok("0.1") === 0.1
    assert ok("2.2250738585072011e-308") === 2.225_073_858_507_201e-308
    # Halfway between two doubles, rounded to even.
    assert ok("9007199254740993.0") === 9_007_199_254_740_992.0
    assert ok("1.7976931348623157e308") === 1.797_693_134_862_315_7e308
  end

  test "overflowing_float_is_an_error" do
    assert error("[1, 1e400]") == {4, "1e400"}
    assert error("-1.8e308") == {0, "-1.8e308"}
  end

  test "underflowing_float_is_zero" do
    assert bits(ok("1.5e-400")) == bits(0.0)
    assert bits(ok("1e-99999999999999999999")) == bits(0.0)
  end

  test "minus_zero_float_is_negative_zero" do
    assert bits(ok("-0.0")) == bits(-0.0)
    # Not in json_rules.rs: Jason reads `-0e5` as "0.0e5", dropping the
    # sign of a zero integer part before an exponent.
    assert bits(ok("-0e5")) == bits(0.0)
    assert bits(ok("-0.0e5")) == bits(-0.0)
  end

  test "leading_zeros_are_an_error" do
    assert error_at("01") == 1
    assert error_at("[-00]") == 3
  end

  test "a_dot_needs_digits_on_both_sides" do
    assert error_at("2.") == 2
    assert error_at("[2.e1]") == 3
    assert error_at(".5") == 0
  end

  test "an_exponent_needs_digits" do
    assert error_at("1e") == 2
    assert error_at("1e+") == 3
    assert error_at("[1e-x]") == 4
  end

  test "plus_sign_nan_and_infinity_are_errors" do
    assert error_at("+1") == 0
    assert error_at("NaN") == 0
    assert error_at("Infinity") == 0
    assert error_at("-Infinity") == 1
  end

  test "minus_alone_is_an_error" do
    assert error("-") == {1, nil}
    assert error_at("[-]") == 2
  end

  # The document

  test "any_value_may_be_at_top_level" do
    assert ok(~s("s")) === "s"
    assert ok("42") === 42
    assert ok("null") === nil
  end

  test "whitespace_is_exactly_space_tab_cr_and_lf" do
    assert ok(" \t\r\n[ \t\r\n1 \t\r\n] \t\r\n") === [1]
    assert error_at("\f1") == 0
    assert error_at("1\v") == 1
    assert error_at("\u00a01") == 0
  end

  test "anything_after_the_value_but_whitespace_is_an_error" do
    assert error_at("1 2") == 2
    assert error_at("{} x") == 3
    assert error_at("[]]") == 2
  end

  test "empty_input_is_an_error" do
    for input <- ["", "  \n"] do
      assert error(input) == {byte_size(input), nil}
    end
  end

  # The caller's limits, and Jason's key options

  defp limited(input, opts), do: TestJSON.decode(input, opts)

  defp limit_at(position, limit, value),
    do: {:error, %{position: position, token: nil, limit: limit, limit_value: value}}

  test "max_depth_counts_a_top_level_container_as_depth_one" do
    assert limited("[1,2]", max_depth: 1) == {:ok, [1, 2]}
    assert limited(~s({"a":{}}), max_depth: 2) == {:ok, %{"a" => %{}}}
    assert limited("7", max_depth: 1) == {:ok, 7}
  end

  test "max_depth_is_passed_at_the_bracket_that_would_open_one_level_more" do
    assert limited("[[1]]", max_depth: 1) == limit_at(1, :max_depth, 1)
    assert limited("[[]]", max_depth: 1) == limit_at(1, :max_depth, 1)
    assert limited(~s({"a":[1,{"b":2}]}), max_depth: 2) == limit_at(8, :max_depth, 2)
    assert limited(:binary.copy("[", 100_000), max_depth: 64) == limit_at(64, :max_depth, 64)
  end

  test "max_values_counts_each_scalar_array_and_object_but_not_keys" do
    assert limited("[1,2]", max_values: 3) == {:ok, [1, 2]}
    assert limited(~s({"a":[]}), max_values: 2) == {:ok, %{"a" => []}}
    assert limited("[1,2,3]", max_values: 3) == limit_at(5, :max_values, 3)
    assert limited(~s({"a":{"b":1}}), max_values: 2) == limit_at(10, :max_values, 2)
  end

  test "a_repeated_key_is_an_error_at_its_quote_with_unique_keys" do
    opts = [duplicate_keys: :error]
    assert limited(~s({"a":1,"a":2}), opts) == limit_at(7, :duplicate_keys, :error)
    assert limited(~s({"a":1,"b":2}), opts) == {:ok, %{"a" => 1, "b" => 2}}
  end

  test "keys_are_compared_decoded" do
    opts = [duplicate_keys: :error]
    assert limited(~S({"a":1,"\u0061":2}), opts) == limit_at(7, :duplicate_keys, :error)
    assert limited(~S({"\n":1,"\u000a":2}), opts) == limit_at(8, :duplicate_keys, :error)
  end

  test "each_object_is_checked_for_repeated_keys_on_its_own" do
    opts = [duplicate_keys: :error]
    assert {:ok, _} = limited(~s({"a":{"a":1},"b":[{"a":2},{"a":3}]}), opts)
    assert limited(~s({"a":{"x":1,"y":2,"x":3}}), opts) == limit_at(18, :duplicate_keys, :error)
    assert limited(~s({"a":{"b":1},"b":2,"a":3}), opts) == limit_at(19, :duplicate_keys, :error)
  end

  test "the_first_thing_wrong_wins_reading_left_to_right" do
    assert limited("[1,x,[[2]]]", max_depth: 1) == {:error, %{position: 3, token: nil}}
    assert limited("[1,x,3,4]", max_values: 3) == {:error, %{position: 3, token: nil}}
    assert limited("[[1],x", max_depth: 1) == limit_at(1, :max_depth, 1)

    assert limited(~s({"a":1,"a" 2}), duplicate_keys: :error) ==
             limit_at(7, :duplicate_keys, :error)

    assert limited("[1,2,x]", max_values: 3) == {:error, %{position: 5, token: nil}}
    assert limited("[1,2,tru]", max_values: 3) == limit_at(5, :max_values, 3)
  end

  # What Jason 1.4.5 does with keys: its key function is applied as a pair
  # completes (Jason.Decoder.object/6, at the `,` or `}` after the value).
  test "keys_become_atoms_as_their_pair_completes" do
    assert limited(~s({"ok":{"error":[1]}}), keys: :atoms!) == {:ok, %{ok: %{error: [1]}}}
    assert limited(~s({"a":1,"\u0061":2}), keys: :atoms) == {:ok, %{a: 1}}
    unknown = "oracle_test_#{System.unique_integer([:positive])}"
    assert limited(~s({"ok":1,"#{unknown}":2}), keys: :atoms!) == limit_at(8, :keys, :atoms!)
    # An error in the value, or right after it, comes first.
    at = byte_size(unknown)

    assert limited(~s({"#{unknown}":[1,}), keys: :atoms!) ==
             {:error, %{position: at + 7, token: nil}}

    assert limited(~s({"#{unknown}":1 2}), keys: :atoms!) ==
             {:error, %{position: at + 6, token: nil}}

    # The pair is complete at its comma, before the next key is read.
    assert limited(~s({"#{unknown}":1,"x), keys: :atoms!) == limit_at(1, :keys, :atoms!)
    long = String.duplicate("x", 256)
    assert limited(~s({"#{long}":1}), keys: :atoms) == limit_at(1, :keys, :atoms)
  end

  defp depth([], depth), do: depth + 1
  defp depth([inner], depth), do: depth(inner, depth + 1)
end
