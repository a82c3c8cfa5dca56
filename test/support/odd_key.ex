defmodule McpFramer.OddKey do
  @moduledoc false
  # A map key whose String.Chars implementation breaks its contract:
  # to_string/1 gives back what the struct holds, text or not.
  defstruct [:text]

  defimpl String.Chars do
    def to_string(%{text: text}), do: text
  end
end
