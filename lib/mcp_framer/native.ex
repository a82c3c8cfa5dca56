defmodule McpFramer.Native do
  # The NIF entry points. Arguments are validated by McpFramer; see
  # native/mcp_framer_nif for what each one does.
  @moduledoc false

  @on_load :load_nif

  def load_nif do
    path = Path.join(:code.priv_dir(:mcp_framer), "native/libmcp_framer_nif")
    :erlang.load_nif(String.to_charlist(path), 0)
  end

  def new(_max_message_bytes, _decode_options), do: :erlang.nif_error(:nif_not_loaded)
  def feed(_resource, _generation, _chunk), do: :erlang.nif_error(:nif_not_loaded)
  def feed_dirty(_resource, _generation, _chunk), do: :erlang.nif_error(:nif_not_loaded)
  def buffered_bytes(_resource, _generation), do: :erlang.nif_error(:nif_not_loaded)
  def settings(_resource), do: :erlang.nif_error(:nif_not_loaded)
  def copies_short_messages, do: :erlang.nif_error(:nif_not_loaded)
  def instruction_set, do: :erlang.nif_error(:nif_not_loaded)
  def debug_assertions, do: :erlang.nif_error(:nif_not_loaded)
  def decode(_document, _options), do: :erlang.nif_error(:nif_not_loaded)
  def decode_dirty(_document, _options), do: :erlang.nif_error(:nif_not_loaded)
  def decode_framed_dirty(_resource, _message), do: :erlang.nif_error(:nif_not_loaded)
  def encode(_term, _flags, _tag), do: :erlang.nif_error(:nif_not_loaded)
  def encode_dirty(_term, _flags, _tag), do: :erlang.nif_error(:nif_not_loaded)
  def encode_map_order(_map, _keys), do: :erlang.nif_error(:nif_not_loaded)
  def pretty(_text, _separators), do: :erlang.nif_error(:nif_not_loaded)
  def pretty_dirty(_text, _separators), do: :erlang.nif_error(:nif_not_loaded)
end
