defmodule McpFramer.EncodeDifferentialTest do
  # McpFramer.JSON's encoding against the oracle in
  # test/support/encode_oracle.ex, which writes Jason 1.4.5's rules out, on
  # random terms (test/support/encode_terms.ex) in every escape mode, both
  # map modes and every form: the same text, or the same error and culprit.
  # Then the round trips: decoding the text of an MCP message gives the
  # message back, and a line in Jason's form, decoded and encoded again, is
  # the same line.
  #
  # Seeded; reproduce a failure with the ENCODE_SEED it prints.
  use ExUnit.Case, async: true

  alias McpFramer.{EncodeTerms, Seed, TestEncoder}
  alias McpFramer.JSON

  @modes [:json, :unicode_safe, :javascript_safe, :html_safe]

  defp run_cases(count, run, check), do: Seed.run_cases("ENCODE_SEED", count, run, check)

  # What McpFramer gives, in the oracle's shape.
  defp ours(term, opts, form) do
    encoded =
      case form do
        :binary -> JSON.encode(term, opts)
        :iodata -> JSON.encode_to_iodata(term, opts)
        :line -> JSON.encode_line(term, opts)
      end

    case encoded do
      {:ok, text} when form == :line ->
        {:ok, binary_part(line!(text), 0, byte_size(line!(text)) - 1)}

      {:ok, text} ->
        {:ok, IO.iodata_to_binary(text)}

      {:error, %{reason: :invalid_byte, byte: byte, value: string}} ->
        {:error, {:invalid_byte, {byte, string}}}

      {:error, %{reason: reason, value: value}} ->
        {:error, {reason, value}}
    end
  end

  defp line!(iodata) do
    line = IO.iodata_to_binary(iodata)
    assert :binary.last(line) == ?\n
    line
  end

  defp check(term, opts) do
    expected = TestEncoder.encode(term, opts)

    for form <- [:binary, :iodata, :line] do
      assert ours(term, opts, form) == expected,
             "#{form} #{inspect(opts)} of #{inspect(term, limit: 20, printable_limit: 300)}"
    end
  end

  test "agrees with the oracle on 4000 random terms of every kind, in every mode" do
    run_cases(4000, 1, fn n ->
      term = EncodeTerms.any(errors: rem(n, 3) == 0)
      maps = if rem(n, 2) == 0, do: :strict, else: :naive
      check(term, escape: Enum.at(@modes, rem(n, 4)), maps: maps)
    end)
  end

  test "agrees with the oracle on 2000 random MCP messages, in every mode" do
    run_cases(2000, 2, fn n ->
      check(EncodeTerms.mcp(), escape: Enum.at(@modes, rem(n, 4)), maps: :strict)
    end)
  end

  test "decoding the text of an MCP message gives the message back" do
    run_cases(2000, 3, fn n ->
      message = EncodeTerms.mcp()
      {:ok, decoded} = JSON.decode(JSON.encode!(message, escape: Enum.at(@modes, rem(n, 4))))
      # On OTP 25, -0.0 == 0.0 even under ===; the floats' bits must agree.
      assert :erlang.term_to_binary(decoded) == :erlang.term_to_binary(message)
    end)
  end

  test "a line in Jason's form, decoded and encoded again, is the same line" do
    run_cases(2000, 4, fn n ->
      escape = Enum.at(@modes, rem(n, 4))
      {:ok, line} = TestEncoder.encode(EncodeTerms.mcp(), escape: escape)
      assert JSON.encode!(JSON.decode!(line), escape: escape) == line
    end)
  end
end
